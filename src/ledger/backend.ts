import type { EntryDraft, LedgerEntry } from "./entry.ts";
import type { Refusal } from "./errors.ts";
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
  /**
   * Only for a backend several processes write at once (PostgreSQL): tells
   * `events` of every track created and every batch committed by any
   * process, and of every (re)connection after which some may have been
   * missed. Resolves once listening; the result stops it.
   */
  follow?(events: LedgerEvents): Promise<() => Promise<void>>;
  /**
   * Only for a backend several processes write at once (PostgreSQL): runs
   * `task` only while this process holds the lock `name` across every
   * process sharing the storage (released when `task` settles, or when the
   * process dies); resolves undefined without running it when another
   * process holds it.
   */
  exclusive?<T>(name: string, task: () => Promise<T>): Promise<T | undefined>;
}

/** What a shared backend tells its followers ({@link LedgerBackend.follow}). */
export interface LedgerEvents {
  /** A track was created, by this process or another. */
  created(path: TrackPath): void;
  /** Entries of a track up to sequence `last` are committed, by this process or another. */
  committed(path: TrackPath, last: number): void;
  /** Listening (re)started: events may have been missed, so re-read what matters. */
  resync(): void;
}

/** One draft's outcome in {@link TrackBackend.commit}. */
export interface CommitOutcome {
  /** The entry the draft is stored as. */
  readonly entry: LedgerEntry;
  /** True when an entry with the draft's sender and Idempotency-Key was stored before: nothing new was. */
  readonly existing: boolean;
}

/** One draft's outcome at a backend: stored (or stored before, by its key), or refused. */
export type DraftOutcome = CommitOutcome | { readonly refused: Refusal };

/**
 * A check a batch must pass where the track's commit order is decided, so
 * that the check and the append it admits are one step for every writer:
 * in the same transaction as the batch, under the lock that orders the
 * track across processes (PostgreSQL), or in the single writer's commit
 * loop. A protocol layer keeps its state (closure, producers) in the gate
 * and admits each draft against it; the ledger never reads that state.
 * Drafts committed through a gate pass the track's seal.
 */
export interface CommitGate {
  /** The newest sequence the gate has taken in (-1 for none). */
  readonly seen: number;
  /**
   * Opens the decision on one batch. `stored` holds every entry committed
   * after {@link seen} (by any process, oldest first, possibly without
   * payloads). Returns the check each draft of the batch passes, in order:
   * undefined stores it as `seq`, anything else refuses it and is handed to
   * its committer as `CommitRefused.reason`. The batch may still fail to
   * commit afterwards: a gate keeps what the check admits only as scratch.
   */
  open(stored: readonly LedgerEntry[]): (draft: EntryDraft, seq: number) => unknown;
  /** The batch is durable: `entries` are the drafts it stored, in order. */
  stored(entries: readonly LedgerEntry[]): void;
}

/** The outcome of {@link TrackBackend.redactOnce}. */
export type RedactResult = { readonly redaction: LedgerEntry } | { readonly already: true };

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
  /**
   * The oldest sequence still stored: 0 until retention removed entries
   * ({@link trim}), and 0 for an empty track. Entries below it are gone.
   */
  first(): Promise<number>;
  /**
   * Retention: removes the entries with `seq < before`, oldest first, in
   * the backend's whole storage units (a directory segment, an S3 batch
   * object, bounded batches of rows), so it may remove fewer; never the
   * newest entry. Stopped at any point (a crash), what is left is the
   * track from some position on, readable as before. Resolves with
   * {@link first} after it.
   */
  trim(before: number): Promise<number>;
  /**
   * Compaction: removes the entries with these sequences (ascending, each
   * stored and neither the newest nor the oldest stored), in bounded steps.
   * The positions of the entries kept never change; reads skip the removed
   * ones, and {@link first} stays where it was. Stopped at any point (a
   * crash), each entry is either stored as before or removed. Resolves with
   * the number removed. Absent on a backend that cannot remove arbitrary
   * entries (compaction then leaves its tracks as they are).
   */
  remove?(seqs: readonly number[]): Promise<number>;
  /**
   * Only for a backend several processes write at once: numbers and stores
   * `drafts` in one transaction, in the order the storage itself decides
   * across processes (seq after the newest entry of any process, wallclock
   * never below the track's newest). A draft whose sender and
   * Idempotency-Key are stored already is answered with that entry and
   * stores nothing. The track's seal refuses drafts (not redactions) unless
   * `gate` is given; `gate` decides each draft inside the transaction.
   * Outcomes are in draft order.
   */
  commit?(
    drafts: readonly EntryDraft[],
    wallclock: bigint,
    gate?: CommitGate,
  ): Promise<DraftOutcome[]>;
  /**
   * Only with {@link commit}: commits a redaction of `seq` and deletes its
   * payload in one transaction, unless another process redacted it first.
   * Throws `LedgerError("not_found")` for no such record and
   * `LedgerError("invalid_request")` when the target is itself a redaction.
   */
  redactOnce?(seq: number, sender: string | undefined, wallclock: bigint): Promise<RedactResult>;
}
