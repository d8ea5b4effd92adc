import type { LedgerEntry, TrackPath } from "../ledger/mod.ts";

/**
 * Where the funnel sends tracks and committed entries for live delivery
 * (its own MoQ listener, a relay session, or both). Calls arrive per track
 * in commit order and must return quickly: the commit path never waits on
 * a subscriber.
 */
export interface RecordSink {
  /** A track exists (created by PUT or its first record, or restored at startup). */
  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void;
  /** Entries of one track were committed, oldest first. */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void;
}

/** One sink that tells `first`, then `second`, of everything. */
export function fanOut(first: RecordSink, second: RecordSink): RecordSink {
  return {
    trackCreated: (path, newest) => {
      first.trackCreated(path, newest);
      second.trackCreated(path, newest);
    },
    committed: (path, entries) => {
      first.committed(path, entries);
      second.committed(path, entries);
    },
  };
}
