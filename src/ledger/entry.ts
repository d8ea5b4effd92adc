import type { GroupId } from "../record/mod.ts";
import { formatGroupId } from "../record/mod.ts";

/**
 * The epoch every entry of this version is written in. It names the
 * numbering of a track's sequence, not a process: every funnel writing a
 * shared ledger numbers in the same epoch, so a group identifier names the
 * same record whichever process committed or serves it.
 */
export const CURRENT_EPOCH = 1;

/**
 * One committed entry of a track's ledger: a record, or a redaction of an
 * earlier record. This is what every backend stores and returns.
 */
export interface LedgerEntry {
  /** Ledger epoch (see {@link GroupId}). */
  readonly epoch: number;
  /** Sequence within the epoch, from 0; the MoQ group sequence is `seq + 1`. */
  readonly seq: number;
  /** Commit time in Unix nanoseconds. */
  readonly wallclock: bigint;
  /** The credential's `sub`; absent when there is none. */
  readonly sender?: string;
  /** The payload as the exact JSON text posted. Absent for a redaction and once redacted. */
  readonly payload?: string;
  /** For a redaction: the group identifier text it redacts. */
  readonly redacts?: string;
  /** True once a redaction removed this record's payload. */
  readonly redacted?: boolean;
  /** The Idempotency-Key the record was posted with, kept to dedupe retries after a restart. */
  readonly idempotencyKey?: string;
  /**
   * The payload as raw bytes, for a record that is not JSON (a Durable
   * Streams byte stream); stored as bytes, never as text. Absent once redacted.
   */
  readonly bytes?: Uint8Array;
  /**
   * Metadata a protocol layer keeps with the entry, as JSON text the ledger
   * stores and never reads (a Durable Streams stream's configuration,
   * closure, producer). Redaction keeps it.
   */
  readonly meta?: string;
  /**
   * The track's seal in force after this entry (see {@link EntryDraft.seal});
   * absent when the track is open. Redactions carry none and change nothing.
   */
  readonly seal?: string;
}

/** What a caller asks to commit; the ledger assigns epoch, seq and wallclock. */
export interface EntryDraft {
  /** The credential's `sub`, if any. */
  readonly sender?: string;
  /** The exact JSON text posted (absent for a redaction). */
  readonly payload?: string;
  /** For a redaction: the group identifier text it redacts. */
  readonly redacts?: string;
  /** The Idempotency-Key the record was posted with. */
  readonly idempotencyKey?: string;
  /** A payload of raw bytes instead of JSON text. */
  readonly bytes?: Uint8Array;
  /** Protocol metadata kept with the entry (JSON text, see {@link LedgerEntry.meta}). */
  readonly meta?: string;
  /**
   * Seals the track from this entry on, `seal` being the reason refusals
   * name; an empty string lifts the seal. A sealed track stores only
   * redactions and drafts committed through a gate (`CommitGate`): a
   * protocol layer seals what only it may write, and what it closed.
   * Absent, the entry keeps the track as it was.
   */
  readonly seal?: string;
}

/** The group identifier of an entry. */
export function entryGroupId(entry: LedgerEntry): GroupId {
  return { epoch: entry.epoch, seq: entry.seq };
}

/** The group identifier text of an entry, as clients see it. */
export function entryGroup(entry: LedgerEntry): string {
  return formatGroupId(entryGroupId(entry));
}

/**
 * The frame published for an entry: `{"sender":...,"payload":...}` or
 * `{"sender":...,"redacts":"<group>"}`; a redacted record (served again, by
 * FETCH or as a restored track's newest) is `{"redacted":true}`, with no
 * sender, as history shows it. The payload text is inserted verbatim, so the
 * posted bytes travel unchanged. A byte payload travels as `"bytes"` (base64),
 * and protocol metadata, when the entry has any, as `"meta"` (verbatim).
 */
export function entryFrame(entry: LedgerEntry): string {
  if (entry.redacted) return `{"redacted":true}`;
  const sender = entry.sender === undefined ? "" : `"sender":${JSON.stringify(entry.sender)}`;
  let body: string;
  if (entry.redacts !== undefined) body = `"redacts":${JSON.stringify(entry.redacts)}`;
  else if (entry.payload !== undefined) body = `"payload":${entry.payload}`;
  else if (entry.bytes !== undefined) body = `"bytes":"${entry.bytes.toBase64()}"`;
  else body = entry.meta === undefined ? `"redacted":true` : "";
  if (entry.meta !== undefined) body += `${body ? "," : ""}"meta":${entry.meta}`;
  return `{${sender}${sender && body ? "," : ""}${body}}`;
}
