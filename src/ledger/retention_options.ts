import type { RetentionConfig } from "../config/mod.ts";
import type { LedgerEntry } from "./entry.ts";
import type { NanoClock, TrackLedger } from "./track_ledger.ts";
import type { TrackBackend } from "./backend.ts";
import type { CommitReader } from "./commit_feed.ts";
import type { TrackPath } from "../record/mod.ts";

/**
 * A stored track as a pass sees it: its storage, read and trimmed directly,
 * so a pass opens no {@link TrackLedger} (a track open here is passed as its
 * ledger, which is one).
 */
export interface StoredTrack {
  /** The track. */
  readonly path: TrackPath;
  /** Its storage. */
  readonly backend: TrackBackend;
  /** True when several processes may write it (the backend numbers entries). */
  readonly shared: boolean;
}

/** Options of `Retention`. */
export interface RetentionOptions {
  /** The default policy and the rules by broadcast prefix. */
  readonly config: Pick<RetentionConfig, "default" | "rules">;
  /** Unix nanoseconds now (the ledger's commit clock); the system clock by default. */
  readonly clock?: NanoClock;
  /** Records one pass removes from one track at most (default `RETENTION_STEP`, 100,000). */
  readonly step?: number;
  /** Tallies (and visited tracks) kept between passes (default `RETENTION_TRACKED`, 10,000). */
  readonly tracked?: number;
  /** Told of each track a pass removed records of. */
  readonly onRemoved?: (track: StoredTrack, records: number, bytes: number) => void;
  /** Told of each track compaction removed superseded records of. */
  readonly onCompacted?: (track: StoredTrack, records: number) => void;
  /** Distinct keys one compaction of one track remembers (default `COMPACTION_KEYS`, 100,000). */
  readonly compactionKeys?: number;
  /** Told of each track a pass could not finish (the others go on). */
  readonly onError?: (path: TrackPath, error: unknown) => void;
  /**
   * True for an entry that must stay with everything after it, since a
   * layer above reads it back (a Durable Stream's creation, closure or
   * deletion). Default: every entry carrying protocol metadata.
   */
  readonly pins?: (entry: LedgerEntry) => boolean;
  /**
   * A layer above whose tracks end (a Durable Stream past its TTL or
   * expiry): asked of every track each pass that it does not skip
   * ({@link RetentionExpiry.skips}), whatever the policies, for a sequence
   * below which every record goes, pins and policies aside. With it a pass
   * runs even when every policy keeps everything.
   */
  readonly expire?: RetentionExpiry;
}

/** See {@link RetentionOptions.expire}. */
export interface RetentionExpiry {
  /** A pass begins. */
  begin(): void;
  /**
   * True when `path` certainly has nothing to end this pass (known from an
   * earlier pass, and nothing committed to it since): the pass then leaves
   * its storage alone, unless a policy applies to it.
   */
  skips?(path: TrackPath): boolean;
  /**
   * What the layer is told of the ledger's commits (subscribed by the
   * retention), so that it knows which tracks changed since it last looked.
   */
  readonly commits?: CommitReader;
  /**
   * The sequence below which `track`'s records all go, or undefined. `open`
   * opens its ledger, for the rare track the layer commits to (ending it).
   */
  cut(track: StoredTrack, open: () => Promise<TrackLedger>): Promise<number | undefined>;
  /** The pass ended; `complete` when it visited every track without a failure. */
  end(complete: boolean): void;
}

/** What one pass did. */
export interface RetentionReport {
  /** Tracks looked at. */
  readonly tracks: number;
  /** Records removed. */
  readonly removed: number;
  /** Payload bytes of the records removed (counted only under a bytes limit). */
  readonly removedBytes: number;
  /** Tracks whose removal failed this time (told to `onError`; tried again next pass). */
  readonly failed: number;
  /** Superseded records compaction removed. */
  readonly compacted: number;
  /** Tracks under a compaction rule whose backend cannot remove records: left whole. */
  readonly uncompactable: number;
  /**
   * Records and payload bytes the tracks looked at (and not failed) store
   * after the pass; `uncounted` tracks are left out (no bytes limit, and the
   * tallies, bounded by `tracked`, were full).
   */
  readonly stored: { readonly records: number; readonly bytes: number; readonly uncounted: number };
}
