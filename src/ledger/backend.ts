import type { LedgerEntry } from "./entry.ts";
import type { TrackPath } from "../record/mod.ts";

/**
 * The small contract each storage backend implements (memory, directory,
 * PostgreSQL, S3). Numbering, batching and redaction rules live above it in
 * {@link Ledger}; a backend only stores and reads entries of one track.
 * The conformance suite in `tests/ledger/` runs against every backend.
 *
 * Failures that mean "the backend is away" must be thrown as
 * `LedgerError("unavailable")`.
 */
export interface LedgerBackend {
  /** Backend name for logs and the startup summary: "memory", "directory", ... */
  readonly name: string;
  /** Every track ever created, in one cheap pass (used once at startup for restore). */
  listTracks(): Promise<TrackPath[]>;
  /**
   * Opens a track's storage. With `create`, makes the track exist durably
   * (PUT and first POST); without it, resolves undefined for an absent track.
   */
  openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined>;
  /** Releases connections and handles. */
  close(): Promise<void>;
  /**
   * A call was given up on after its deadline: drop connections it may be
   * stuck in (a server that stopped answering), so later calls get fresh
   * ones once the server is back. Optional; backends without connections
   * have nothing to drop.
   */
  abandon?(): void;
}

/** Storage of one track's entries. Calls for one track never overlap in `append`. */
export interface TrackBackend {
  /**
   * Appends entries, already numbered consecutively after the current
   * newest. Resolves only when they are on stable storage for this backend;
   * on failure none of them may later become visible half-written.
   */
  append(entries: readonly LedgerEntry[]): Promise<void>;
  /** The newest entry, without scanning history; undefined for an empty track. */
  latest(): Promise<LedgerEntry | undefined>;
  /**
   * Up to `limit` entries with `seq < before` (or the newest when `before`
   * is undefined), newest first. Reads only what it returns, or close to it.
   */
  readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]>;
  /**
   * Up to `limit` entries with `seq > after` (from the oldest when `after`
   * is undefined), oldest first. Reads only what it returns, or close to it.
   */
  readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]>;
  /** The entry with this sequence, or undefined. */
  get(seq: number): Promise<LedgerEntry | undefined>;
  /** Deletes the payload of entry `seq` from storage and marks it redacted. */
  erasePayload(seq: number): Promise<void>;
}
