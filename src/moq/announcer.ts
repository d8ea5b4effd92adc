import { normalizePath, prefixCovers } from "../path/mod.ts";

/** A change to the set of announced broadcasts. */
export interface AnnounceEvent {
  /** Canonical broadcast path. */
  readonly path: string;
  /** True when the broadcast became active, false when it ended. */
  readonly active: boolean;
  /** Hop ids from the origin towards us (loop detection); empty for local broadcasts. */
  readonly hops: readonly bigint[];
}

/** A handle for one announcement; `withdraw()` ends it. */
export interface Announcement {
  /** Canonical broadcast path. */
  readonly path: string;
  /** Ends this announcement (idempotent). The path stays active while other handles hold it. */
  withdraw(): void;
  /**
   * Gives the broadcast a new hop list (a relay's route changed): peers are
   * told again (lite-05's restart) without the broadcast ending. Ignored
   * once withdrawn.
   */
  update(hops: readonly bigint[]): void;
}

/** Told of each announcement change under the prefix it subscribed to. */
export type AnnounceListener = (event: AnnounceEvent) => void;

/**
 * The set of broadcasts an endpoint offers. Sessions answer the peer's
 * announce requests from it; one announcer may be shared by many sessions
 * (a relay) or owned by one (a funnel's upstream session).
 */
export class Announcer {
  readonly #entries = new Map<string, { count: number; hops: readonly bigint[] }>();
  readonly #listeners = new Set<AnnounceListener>();

  /** Announces `path` (any spelling) until the returned handle is withdrawn or `signal` aborts. */
  announce(
    path: string,
    options: { hops?: readonly bigint[]; signal?: AbortSignal } = {},
  ): Announcement {
    const canonical = normalizePath(path);
    const hops = options.hops ?? [];
    const entry = this.#entries.get(canonical);
    if (entry) entry.count++;
    else {
      this.#entries.set(canonical, { count: 1, hops });
      this.#emit({ path: canonical, active: true, hops });
    }
    let done = false;
    const withdraw = (): void => {
      if (done) return;
      done = true;
      options.signal?.removeEventListener("abort", withdraw);
      const e = this.#entries.get(canonical);
      if (!e) return;
      if (--e.count === 0) {
        this.#entries.delete(canonical);
        this.#emit({ path: canonical, active: false, hops: [] });
      }
    };
    const update = (next: readonly bigint[]): void => {
      const e = this.#entries.get(canonical);
      if (done || !e) return;
      e.hops = next;
      this.#emit({ path: canonical, active: true, hops: next });
    };
    if (options.signal?.aborted) withdraw();
    else options.signal?.addEventListener("abort", withdraw, { once: true });
    return { path: canonical, withdraw, update };
  }

  /** True when `path` is announced. */
  has(path: string): boolean {
    return this.#entries.has(normalizePath(path));
  }

  /** Active broadcasts under `prefix`. */
  active(prefix = ""): AnnounceEvent[] {
    const p = normalizePath(prefix);
    const out: AnnounceEvent[] = [];
    for (const [path, e] of this.#entries) {
      if (prefixCovers(p, path)) out.push({ path, active: true, hops: e.hops });
    }
    return out;
  }

  /**
   * Calls `listener` for every later change under `prefix` and returns the
   * current snapshot (taken atomically with the registration) and an
   * unsubscribe function.
   */
  subscribe(
    prefix: string,
    listener: AnnounceListener,
  ): { snapshot: AnnounceEvent[]; stop: () => void } {
    const p = normalizePath(prefix);
    const filtered: AnnounceListener = (e) => {
      if (prefixCovers(p, e.path)) listener(e);
    };
    this.#listeners.add(filtered);
    return { snapshot: this.active(p), stop: () => this.#listeners.delete(filtered) };
  }

  #emit(event: AnnounceEvent): void {
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
