import type { Ledger, LedgerEntry, TrackPath } from "../ledger/mod.ts";
import { type Loaded, loadStream } from "./load_state.ts";
import { streamKey, streamTrack } from "./names.ts";
import type { StreamState } from "./stream_state.ts";

/**
 * The streams this process has read back, with what only it knows: the
 * forks made of each source (a deleted source with forks stays "gone",
 * 410, until its last fork is deleted), a lock per stream that orders
 * writers' checks, and the readers waiting for a track's next commit.
 */
export class StreamRegistry {
  readonly #ledger: Ledger;
  readonly #now: () => number;
  readonly #loaded = new Map<string, Promise<Loaded>>();
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

  /** The stream at a track, read back once and then kept. */
  async load(path: TrackPath, name: string): Promise<Loaded> {
    const key = streamKey(path);
    if (this.#softDeleted.has(key)) return { gone: "deleted" };
    let loading = this.#loaded.get(key);
    if (!loading) {
      loading = loadStream(this.#ledger, path, name, this.#now());
      this.#loaded.set(key, loading);
      loading.then((l) => this.#noteFork(l.state), () => this.#loaded.delete(key));
    }
    return await loading;
  }

  /** True when the stream was deleted while forks still read it (410). */
  softDeleted(path: TrackPath): boolean {
    return this.#softDeleted.has(streamKey(path));
  }

  /** Keeps a state just created or changed. */
  set(state: StreamState): void {
    this.#loaded.set(streamKey(state.path), Promise.resolve({ state }));
    this.#noteFork(state);
  }

  /** Forgets a stream, so the next request reads it back from the ledger. */
  forget(path: TrackPath): void {
    this.#loaded.delete(streamKey(path));
  }

  /**
   * Records a deletion. A stream with forks stays soft-deleted; a fork's
   * deletion may release its source.
   */
  deleted(state: StreamState, sourcePath: TrackPath | undefined): void {
    const key = streamKey(state.path);
    this.#loaded.set(key, Promise.resolve({ gone: "deleted" }));
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

  /** Told of every committed batch (the funnel's record sink): wakes the track's readers. */
  committed(path: TrackPath, _entries: readonly LedgerEntry[]): void {
    const waiters = this.#waiters.get(streamKey(path));
    if (waiters) { for (const wake of [...waiters]) wake(); }
  }

  #noteFork(state: StreamState | undefined): void {
    const fork = state?.config.fork;
    if (!state || !fork) return;
    const sourceKey = streamKey(streamTrack(fork.from));
    let forks = this.#forks.get(sourceKey);
    if (!forks) this.#forks.set(sourceKey, forks = new Set());
    forks.add(streamKey(state.path));
  }
}
