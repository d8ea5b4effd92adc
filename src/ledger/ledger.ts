import type { LedgerBackend, LedgerEvents } from "./backend.ts";
import { STORAGE_DEADLINE_MS, withDeadline } from "./deadline.ts";
import {
  type CommitListener,
  type NanoClock,
  systemNanoClock,
  TrackLedger,
} from "./track_ledger.ts";
import { trackKey, type TrackPath } from "../record/mod.ts";

/** Options of {@link Ledger}. */
export interface LedgerOptions {
  /** Commit-time clock in Unix nanoseconds; the system clock by default. */
  readonly clock?: NanoClock;
  /** Most entries committed in one batch. */
  readonly maxBatch?: number;
  /** Told of every committed batch, per track in commit order (live publishing hooks here). */
  readonly onCommit?: CommitListener;
  /**
   * Longest wait for one storage call before it counts as unavailable, ms
   * (default {@link STORAGE_DEADLINE_MS}; 0 waits as long as the backend does).
   */
  readonly deadlineMs?: number;
  /**
   * Shared backends: a track another process created (or first wrote) was
   * opened here, so its records can be published too.
   */
  readonly onTrackLearned?: (ledger: TrackLedger) => void;
  /** Shared backends: entries read that another process committed. */
  readonly onLearned?: (ledger: TrackLedger, count: number) => void;
  /** Told of every batch this process committed, by its number of new entries. */
  readonly onBatch?: (ledger: TrackLedger, count: number) => void;
  /** Shared backends: following another process's commits failed for now (retried). */
  readonly onFollowError?: (error: unknown) => void;
}

/**
 * The funnel's view of storage: one {@link TrackLedger} per track over any
 * {@link LedgerBackend}. The funnel never knows which backend it has.
 */
export class Ledger {
  /** The backend underneath (every call bounded by the deadline), for its name and lifecycle. */
  readonly backend: LedgerBackend;
  readonly #clock: NanoClock;
  readonly #maxBatch: number;
  readonly #onCommit: CommitListener | undefined;
  readonly #options: LedgerOptions;
  #unfollow: (() => Promise<void>) | undefined;
  readonly #open = new Map<string, Promise<TrackLedger>>();
  readonly #opening = new Map<string, number>();
  // The same, settled, by path object: the HTTP layer reuses one path per
  // track URL, so the hot path finds its ledger without a key or an await.
  readonly #ready = new WeakMap<TrackPath, TrackLedger>();

  /** Wraps a backend. */
  constructor(backend: LedgerBackend, options: LedgerOptions = {}) {
    const deadline = options.deadlineMs ?? STORAGE_DEADLINE_MS;
    this.backend = deadline > 0 ? withDeadline(backend, deadline) : backend;
    this.#clock = options.clock ?? systemNanoClock();
    this.#maxBatch = options.maxBatch ?? 1024;
    this.#onCommit = options.onCommit;
    this.#options = options;
  }

  /** True when several processes may write this ledger at once (PostgreSQL). */
  get shared(): boolean {
    return this.backend.follow !== undefined;
  }

  /**
   * On a shared backend, starts following what other processes create and
   * commit: their new tracks are opened here (told to `onTrackLearned`), and
   * their commits are told to `onCommit` in each track's order. Resolves once
   * listening; a no-op for single-process backends.
   */
  async follow(): Promise<void> {
    if (!this.backend.follow || this.#unfollow) return;
    const events: LedgerEvents = {
      created: (path) => void this.#learnTrack(path).catch(this.#followError),
      committed: (path, last) => void this.#learnTrack(path, last).catch(this.#followError),
      resync: () => void this.#resync().catch(this.#followError),
    };
    this.#unfollow = await this.backend.follow(events);
  }

  readonly #followError = (error: unknown): void => this.#options.onFollowError?.(error);

  async #learnTrack(path: TrackPath, last?: number): Promise<void> {
    const key = trackKey(path);
    const known = this.#open.has(key) || this.#opening.has(key);
    const track = await this.track(path, false);
    if (!track) return;
    if (!known) this.#options.onTrackLearned?.(track);
    if (last !== undefined) track.learn(last);
  }

  // Notices may have been missed while not listening: every open track reads its newest
  // entry again, and tracks created meanwhile are opened.
  async #resync(): Promise<void> {
    for (const opening of [...this.#open.values()]) {
      const track = await opening;
      const newest = await track.backend.latest();
      if (newest) track.learn(newest.seq);
    }
    for (const path of await this.backend.listTracks()) {
      if (!this.#open.has(trackKey(path))) await this.#learnTrack(path);
    }
  }

  /**
   * The ledger of a track. With `create` the track is made to exist
   * durably; without it an absent track resolves undefined.
   */
  async track(path: TrackPath, create: boolean): Promise<TrackLedger | undefined> {
    const ready = this.#ready.get(path);
    if (ready) return ready;
    const key = trackKey(path);
    const cached = this.#open.get(key);
    if (cached) {
      const ledger = await cached;
      this.#ready.set(path, ledger);
      return ledger;
    }
    // Counted while opening, so a notice of this very track is not taken for another's.
    this.#opening.set(key, (this.#opening.get(key) ?? 0) + 1);
    let backend;
    try {
      backend = await this.backend.openTrack(path, create);
    } finally {
      const left = this.#opening.get(key)! - 1;
      if (left > 0) this.#opening.set(key, left);
      else this.#opening.delete(key);
    }
    if (!backend) return undefined;
    // Another caller may have opened it while we awaited; keep the first.
    const again = this.#open.get(key);
    if (again) return await again;
    const opening = TrackLedger.open(path, backend, this.#clock, this.#maxBatch, this.#onCommit, {
      ...(this.#options.onLearned ? { onLearned: this.#options.onLearned } : {}),
      ...(this.#options.onBatch ? { onBatch: this.#options.onBatch } : {}),
      onFollowError: this.#followError,
    });
    this.#open.set(key, opening);
    opening.catch(() => this.#open.delete(key));
    return await opening;
  }

  /** The ledger of a track already opened through this path object, without waiting. */
  opened(path: TrackPath): TrackLedger | undefined {
    return this.#ready.get(path);
  }

  /** Every track recorded in the backend (one pass). */
  tracks(): Promise<TrackPath[]> {
    return this.backend.listTracks();
  }

  /** Stops following and closes the backend. */
  async close(): Promise<void> {
    const unfollow = this.#unfollow;
    this.#unfollow = undefined;
    await unfollow?.().catch(() => {});
    for (const opening of this.#open.values()) opening.then((t) => t.stopFollowing(), () => {});
    await this.backend.close();
  }
}
