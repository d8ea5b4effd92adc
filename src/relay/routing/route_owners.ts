/**
 * Who owns each broadcast announced by publishers connected to this relay.
 * A route belongs to its publisher: the first identity to announce a path
 * holds it while any of its announcements of that path lives and for a
 * grace period after the last one ended (its publisher restarting), and an
 * announcement of the same path by another identity waits until the holder
 * is gone that long. Peers' announcements carry no identity and are not
 * subject to ownership here (each relay enforces it on its own publishers).
 *
 * @module
 */
import { systemTimers, type Timers } from "../../timers/mod.ts";

/** Most paths kept in their grace period at once; beyond, the longest released is forgotten. */
export const MAX_RELEASED_OWNERS = 10_000;

/** Options of {@linkcode RouteOwners}. */
export interface RouteOwnersOptions {
  /** How long a path stays with an identity after its last announcement ended, ms. */
  readonly graceMs: number;
  /** Timers (default the global ones). */
  readonly timers?: Timers;
  /** Most paths in their grace period (default {@linkcode MAX_RELEASED_OWNERS}). */
  readonly maxReleased?: number;
  /** A path's holder is gone (its grace ended or it was forgotten): waiting announcements may go. */
  readonly onFree: (path: string) => void;
}

interface Held {
  readonly owner: string;
  /** Live announcements of the path by the owner. */
  live: number;
  /** The grace timer while `live` is 0. */
  timer: unknown;
}

/** The owner of each path announced by a publisher connected here. */
export class RouteOwners {
  readonly #held = new Map<string, Held>();
  /** Paths in their grace period, oldest release first. */
  readonly #released = new Set<string>();
  readonly #opts: RouteOwnersOptions;
  readonly #timers: Timers;

  /** Creates an empty set of owners. */
  constructor(options: RouteOwnersOptions) {
    this.#opts = options;
    this.#timers = options.timers ?? systemTimers;
  }

  /** The identity holding `path`, if any. */
  owner(path: string): string | undefined {
    return this.#held.get(path)?.owner;
  }

  /** Number of paths held, live or in their grace period (for tests of the bound). */
  get size(): number {
    return this.#held.size;
  }

  /**
   * `owner` announces `path`: true when it holds the path now (it did
   * already, or nobody did), false when another identity holds it and the
   * announcement must wait.
   */
  claim(path: string, owner: string): boolean {
    const held = this.#held.get(path);
    if (held === undefined) {
      this.#held.set(path, { owner, live: 1, timer: undefined });
      return true;
    }
    if (held.owner !== owner) return false;
    if (held.live === 0) this.#reclaimed(path, held);
    held.live++;
    return true;
  }

  /** One of `owner`'s announcements of `path` ended; the last one starts the grace period. */
  release(path: string, owner: string): void {
    const held = this.#held.get(path);
    if (held === undefined || held.owner !== owner || held.live === 0) return;
    if (--held.live > 0) return;
    held.timer = this.#timers.setTimeout(() => this.#free(path, held), this.#opts.graceMs);
    this.#released.add(path);
    const max = this.#opts.maxReleased ?? MAX_RELEASED_OWNERS;
    if (this.#released.size > max) {
      const oldest = this.#released.values().next().value!;
      this.#free(oldest, this.#held.get(oldest)!);
    }
  }

  // The owner is back within its grace period.
  #reclaimed(path: string, held: Held): void {
    this.#timers.clearTimeout(held.timer);
    held.timer = undefined;
    this.#released.delete(path);
  }

  #free(path: string, held: Held): void {
    if (this.#held.get(path) !== held || held.live > 0) return;
    this.#timers.clearTimeout(held.timer);
    this.#held.delete(path);
    this.#released.delete(path);
    this.#opts.onFree(path);
  }

  /** Cancels every grace timer. */
  close(): void {
    for (const h of this.#held.values()) this.#timers.clearTimeout(h.timer);
    this.#held.clear();
    this.#released.clear();
  }
}
