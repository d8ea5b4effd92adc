import type { LedgerBackend } from "./backend.ts";
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
  readonly #open = new Map<string, Promise<TrackLedger>>();
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
    const backend = await this.backend.openTrack(path, create);
    if (!backend) return undefined;
    // Another caller may have opened it while we awaited; keep the first.
    const again = this.#open.get(key);
    if (again) return await again;
    const opening = TrackLedger.open(path, backend, this.#clock, this.#maxBatch, this.#onCommit);
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

  /** Closes the backend. */
  close(): Promise<void> {
    return this.backend.close();
  }
}
