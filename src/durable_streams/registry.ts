import type { Ledger, LedgerEntry, TrackLedger } from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { systemTimers, type Timers } from "../timers/mod.ts";
import { StreamGate } from "./gate.ts";
import { recoverHead, segmentsOf } from "./load_state.ts";
import { streamKey, streamTrack } from "./names.ts";
import { StreamState } from "./stream_state.ts";

/**
 * Most streams whose state (gate, head, producers) a registry keeps. The
 * state is read back from the ledger when a forgotten stream is named
 * again, so the bound costs a read, never a decision: without it every
 * stream ever requested stays in memory, each with up to 1024 producers.
 */
export const MAX_KEPT_STREAMS = 4096;

/**
 * Most forks a registry remembers the source of (each a fork made or read
 * here and not deleted). The links only make a deleted source answer 410
 * while forks read it, which a restart forgets too: a link dropped past the
 * bound (least recently noted first) lets its source be deleted outright
 * (404), and the fork still reads what it inherited from the ledger.
 */
export const MAX_KEPT_FORKS = 4096;

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
 * and the readers watching for a track's next commit (one entry per open
 * read, gone when it answers).
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
  /** Each remembered fork's source, least recently noted first (at most `maxForks`). */
  readonly #links = new Map<string, string>();
  readonly #maxForks: number;
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #waiters = new Map<string, Set<CommitWatch>>();
  /** Keys of the kept gates and states, least recently used first. */
  readonly #recent = new Map<string, true>();
  readonly #maxKept: number;
  readonly #timers: Timers;

  /**
   * Creates the registry over a ledger, keeping at most `maxKept` streams'
   * state and the sources of `maxForks` forks; long-poll waits run on `timers`.
   */
  constructor(
    ledger: Ledger,
    now: () => number,
    maxKept: number = MAX_KEPT_STREAMS,
    maxForks: number = MAX_KEPT_FORKS,
    timers: Timers = systemTimers,
  ) {
    this.#ledger = ledger;
    this.#timers = timers;
    this.#now = now;
    this.#maxKept = maxKept;
    this.#maxForks = maxForks;
  }

  /**
   * Forks whose source is remembered (at most {@link MAX_KEPT_FORKS}); the
   * soft-deleted sources and their own sources are among them, so bounded too.
   */
  get forkLinks(): number {
    return this.#links.size;
  }

  /** How many streams' state is kept (at most {@link MAX_KEPT_STREAMS}, past requests in flight). */
  get kept(): number {
    return this.#recent.size;
  }

  // A stream was used: it is the most recent, and the least recent idle ones past the
  // bound are forgotten (their gates and states; a later request reads them back).
  #use(key: string): void {
    this.#recent.delete(key);
    this.#recent.set(key, true);
    if (this.#recent.size <= this.#maxKept) return;
    for (const old of this.#recent.keys()) {
      if (this.#recent.size <= this.#maxKept) break;
      // A stream with a write or a live reader in progress is kept until it is idle.
      if (old === key || this.#locks.has(old) || this.#waiters.has(old)) continue;
      if (this.#gates.has(old) && !this.#ready.has(old)) continue;
      this.#recent.delete(old);
      this.#gates.delete(old);
      this.#ready.delete(old);
      this.#states.delete(old);
    }
  }

  /** The gate of a track, its state read back from the track the first time. */
  gate(track: TrackLedger): Promise<StreamGate> {
    const key = streamKey(track.path);
    this.#use(key);
    let gate = this.#gates.get(key);
    if (!gate) {
      const pending: Promise<StreamGate> = recoverHead(track).then((recovered) => {
        const made = new StreamGate(recovered, this.#now);
        // Unless forgotten meanwhile: a forgotten gate is not told of commits.
        if (this.#gates.get(key) === pending) this.#ready.set(key, made);
        return made;
      });
      gate = pending;
      this.#gates.set(key, gate);
      gate.catch(() => {
        if (this.#gates.get(key) === pending) this.#gates.delete(key);
      });
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
    // A kept state is current only with the gate commits are folded into.
    const known = this.#states.get(key);
    if (known?.created === head.created && known.gate === gate) return { state: known };
    const segments = await segmentsOf(this.#ledger, track, head.created, head.config);
    const again = this.#states.get(key);
    if (again?.created === head.created && again.gate === gate) return { state: again };
    const state = new StreamState({
      path,
      name,
      track,
      config: head.config,
      created: head.created,
      segments,
      gate,
    });
    // Not kept if its gate was forgotten meanwhile: it would no longer hear of commits.
    if (this.#ready.get(key) === gate) this.set(state);
    return { state };
  }

  /** True when the stream was deleted while forks still read it (410). */
  softDeleted(path: TrackPath): boolean {
    return this.#softDeleted.has(streamKey(path));
  }

  /** Keeps a stream just created (or read back). */
  set(state: StreamState): void {
    this.#use(streamKey(state.path));
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
    this.#links.delete(fork);
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
   * Starts watching for the track's next commit: a commit from now on wakes
   * the watch, even one that lands before {@link CommitWatch.wait} is
   * called. A reader watches before it reads, so an append committed while
   * its read is in progress is never missed. Cancel it when done.
   */
  watch(path: TrackPath): CommitWatch {
    const key = streamKey(path);
    let watches = this.#waiters.get(key);
    if (!watches) this.#waiters.set(key, watches = new Set());
    const watch = new CommitWatch(this.#timers, () => {
      watches!.delete(watch);
      if (watches!.size === 0 && this.#waiters.get(key) === watches) this.#waiters.delete(key);
    });
    watches.add(watch);
    return watch;
  }

  /**
   * Told of every committed batch, by any process, in each track's order
   * (read from the ledger's commit feed): the track's gate takes it in, then its
   * readers wake.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    const key = streamKey(path);
    this.#ready.get(key)?.fold(entries);
    const watches = this.#waiters.get(key);
    if (watches) { for (const watch of [...watches]) watch.fire(); }
  }

  #noteFork(state: StreamState): void {
    const fork = state.config.fork;
    if (!fork) return;
    const sourceKey = streamKey(streamTrack(fork.from));
    let forks = this.#forks.get(sourceKey);
    if (!forks) this.#forks.set(sourceKey, forks = new Set());
    const key = streamKey(state.path);
    forks.add(key);
    this.#links.delete(key);
    this.#links.set(key, sourceKey);
    while (this.#links.size > this.#maxForks) {
      const [oldest, itsSource] = this.#links.entries().next().value!;
      this.#release(oldest, itsSource);
    }
  }
}

/**
 * One reader's watch for a track's next commit ({@link StreamRegistry.watch}):
 * fired at most once, and remembered if fired before anyone waits.
 */
export class CommitWatch {
  readonly #leave: () => void;
  #fired = false;
  #wake: (() => void) | undefined;
  #left = false;
  readonly #timers: Timers;

  /** A watch that calls `leave` once, when fired or cancelled; its waits run on `timers`. */
  constructor(timers: Timers, leave: () => void) {
    this.#timers = timers;
    this.#leave = leave;
  }

  /** The track committed: wakes the waiter, or the next {@link wait} returns at once. */
  fire(): void {
    this.#fired = true;
    this.cancel();
    this.#wake?.();
  }

  /** Stops watching (idempotent). */
  cancel(): void {
    if (this.#left) return;
    this.#left = true;
    this.#leave();
  }

  /**
   * Resolves true once the track committed since the watch began (at once
   * if it has), false after `ms` or when `signal` aborts.
   */
  wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#fired) return Promise.resolve(true);
    if (this.#left || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (committed: boolean) => {
        this.#timers.clearTimeout(timer);
        signal?.removeEventListener("abort", aborted);
        this.#wake = undefined;
        resolve(committed);
      };
      const aborted = () => done(false);
      const timer = this.#timers.setTimeout(() => done(false), ms);
      signal?.addEventListener("abort", aborted);
      this.#wake = () => done(true);
    });
  }
}
