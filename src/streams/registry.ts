import type { Ledger, LedgerEntry, TrackLedger, TrackPath } from "../ledger/mod.ts";
import { StreamGate } from "./gate.ts";
import { recoverHead, segmentsOf } from "./load_state.ts";
import { streamKey, streamTrack } from "./names.ts";
import { StreamState } from "./stream_state.ts";

/** What looking a stream up found: a stream, a deleted one, or no track at all. */
export type Loaded =
  | { readonly state: StreamState }
  | { readonly state?: undefined; readonly gone: "absent" | "deleted" };

/**
 * The streams this process knows: each track's gate (its writer state, read
 * back once and then kept current from the ledger's commits), the stream as
 * readers see it, and what only this process knows: the forks made of each
 * source (a deleted source with forks stays "gone", 410, until its last fork
 * is deleted), a lock per stream that keeps its writes in arrival order,
 * and the readers waiting for a track's next commit.
 */
export class StreamRegistry {
  readonly #ledger: Ledger;
  readonly #now: () => number;
  readonly #gates = new Map<string, Promise<StreamGate>>();
  readonly #ready = new Map<string, StreamGate>();
  readonly #states = new Map<string, StreamState>();
  readonly #softDeleted = new Set<string>();
  readonly #forks = new Map<string, Set<string>>();
  readonly #sources = new Map<string, string>();
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #waiters = new Map<string, Set<() => void>>();

  /** Creates the registry over a ledger. */
  constructor(ledger: Ledger, now: () => number) {
    this.#ledger = ledger;
    this.#now = now;
  }

  /** The gate of a track, its state read back from the track the first time. */
  gate(track: TrackLedger): Promise<StreamGate> {
    const key = streamKey(track.path);
    let gate = this.#gates.get(key);
    if (!gate) {
      gate = recoverHead(track).then((recovered) => {
        const made = new StreamGate(recovered, this.#now);
        this.#ready.set(key, made);
        return made;
      });
      this.#gates.set(key, gate);
      gate.catch(() => this.#gates.delete(key));
    }
    return gate;
  }

  /**
   * The stream at a track as far as this process knows; with `fresh`, as far
   * as the ledger's storage knows (on a shared ledger, one more read).
   */
  async load(path: TrackPath, name: string, fresh = false): Promise<Loaded> {
    const key = streamKey(path);
    if (this.#softDeleted.has(key)) return { gone: "deleted" };
    const track = await this.#ledger.track(path, false);
    if (!track) return { gone: "absent" };
    const gate = await this.gate(track);
    await gate.catchUp(track, fresh);
    const head = gate.head;
    if (!head) return { gone: "deleted" };
    const known = this.#states.get(key);
    if (known?.created === head.created) return { state: known };
    const segments = await segmentsOf(this.#ledger, track, head.created, head.config);
    const again = this.#states.get(key);
    if (again?.created === head.created) return { state: again };
    const state = new StreamState({
      path,
      name,
      track,
      config: head.config,
      created: head.created,
      segments,
      gate,
    });
    this.set(state);
    return { state };
  }

  /** True when the stream was deleted while forks still read it (410). */
  softDeleted(path: TrackPath): boolean {
    return this.#softDeleted.has(streamKey(path));
  }

  /** Keeps a stream just created (or read back). */
  set(state: StreamState): void {
    this.#states.set(streamKey(state.path), state);
    this.#noteFork(state);
  }

  /**
   * Records a deletion. A stream with forks stays soft-deleted; a fork's
   * deletion may release its source.
   */
  deleted(state: StreamState, sourcePath: TrackPath | undefined): void {
    const key = streamKey(state.path);
    this.#states.delete(key);
    const sourceKey = sourcePath && streamKey(sourcePath);
    if ((this.#forks.get(key)?.size ?? 0) > 0) {
      // Still read by forks: it keeps its own source until it is released.
      this.#softDeleted.add(key);
      if (sourceKey) this.#sources.set(key, sourceKey);
    } else if (sourceKey) this.#release(key, sourceKey);
  }

  // A fork is gone for good: its source loses a reader, and a soft-deleted source
  // with no readers left is released in turn, up the chain.
  #release(fork: string, source: string): void {
    const forks = this.#forks.get(source);
    forks?.delete(fork);
    if (forks && forks.size > 0) return;
    this.#forks.delete(source);
    if (!this.#softDeleted.delete(source)) return;
    const next = this.#sources.get(source);
    this.#sources.delete(source);
    if (next) this.#release(source, next);
  }

  /** Runs `fn` after every earlier holder of this stream's lock. */
  lock<T>(path: TrackPath, fn: () => Promise<T>): Promise<T> {
    const key = streamKey(path);
    const previous = this.#locks.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const settled = run.then(() => {}, () => {});
    this.#locks.set(key, settled);
    settled.then(() => {
      if (this.#locks.get(key) === settled) this.#locks.delete(key);
    });
    return run;
  }

  /**
   * Resolves true at the track's next commit, false after `ms` or when
   * `signal` aborts.
   */
  nextCommit(path: TrackPath, ms: number, signal?: AbortSignal): Promise<boolean> {
    const key = streamKey(path);
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(key);
      if (!waiters) this.#waiters.set(key, waiters = new Set());
      const done = (committed: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", aborted);
        waiters!.delete(wake);
        if (waiters!.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key);
        resolve(committed);
      };
      const wake = () => done(true);
      const aborted = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener("abort", aborted);
      waiters.add(wake);
    });
  }

  /**
   * Told of every committed batch, by any process, in each track's order
   * (the funnel's record sink): the track's gate takes it in, then its
   * readers wake.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    const key = streamKey(path);
    this.#ready.get(key)?.fold(entries);
    const waiters = this.#waiters.get(key);
    if (waiters) { for (const wake of [...waiters]) wake(); }
  }

  #noteFork(state: StreamState): void {
    const fork = state.config.fork;
    if (!fork) return;
    const sourceKey = streamKey(streamTrack(fork.from));
    let forks = this.#forks.get(sourceKey);
    if (!forks) this.#forks.set(sourceKey, forks = new Set());
    forks.add(streamKey(state.path));
  }
}
