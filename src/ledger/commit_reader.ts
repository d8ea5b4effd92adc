// A reader of the ledger's commits: what CommitFeed tells each subscriber.
import type { LedgerEntry } from "./entry.ts";
import type { TrackPath } from "../record/mod.ts";

/** What a committed batch tells besides its entries. */
export interface CommitInfo {
  /** Entries of the batch that another process committed (shared ledgers; 0 when read back). */
  readonly learned: number;
  /** When the feed took the batch (it was durable), ms on the `performance.timeOrigin` scale. */
  readonly at: number;
}

/**
 * One reader of the ledger's `CommitFeed`: the live publisher, the own
 * listener's worker, FETCH answers, Durable Streams readers, metrics,
 * tracing, an embedder. Calls arrive per track in commit order, never on the
 * commit path. A call that returns a promise holds back this reader's next
 * call until it settles (flow control); nobody else waits on it.
 */
export interface CommitReader {
  /**
   * A track exists (created by PUT or a first POST, or another process's track learned), with
   * its newest entry.
   */
  trackCreated?(path: TrackPath, newest: LedgerEntry | undefined): void | Promise<void>;
  /**
   * These tracks were stored before this process started (the restart's one listing of the
   * store, or tracks another process created while this one was not listening), and none is
   * opened for it: a reader that wants one's newest entry asks the ledger when it needs it (the
   * live side does when a subscriber names the track). Their commits from now on are told as
   * any. Told at once, unqueued, and possibly again for a track told before.
   */
  tracksStored?(paths: readonly TrackPath[]): void;
  /** Entries of one track were committed, oldest first. */
  committed?(
    path: TrackPath,
    entries: readonly LedgerEntry[],
    info: CommitInfo,
  ): void | Promise<void>;
  /** Reading other processes' commits failed for now (it is retried); told at once, unqueued. */
  followFailed?(error: unknown): void;
  /**
   * Shared ledgers: listening to other processes restarted, so commits they made meanwhile to
   * tracks not open here were not told (those open here are read again and told). Told at once,
   * unqueued.
   */
  resynced?(): void;
}
