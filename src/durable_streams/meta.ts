/**
 * The metadata a stream keeps with its ledger entries (`LedgerEntry.meta`,
 * JSON text): the configuration on the entry that creates the stream,
 * closure, deletion, the idempotent producer and `Stream-Seq` of an append,
 * and how many JSON messages an entry holds. Kept with the entries, it is
 * committed atomically with the data it describes and recovered by reading
 * the track back.
 */
export interface EntryMeta {
  /** This entry creates the stream with this configuration. */
  readonly create?: StreamConfig;
  /** The stream is closed after this entry. */
  readonly closed?: true;
  /** The stream was deleted here; a later `create` starts a new one. */
  readonly deleted?: true;
  /** The idempotent producer of this append: id, epoch, seq. */
  readonly producer?: readonly [string, number, number];
  /** The `Stream-Seq` of this append. */
  readonly seq?: string;
  /** JSON streams: the payload is an array of this many messages (absent: one message). */
  readonly n?: number;
  /**
   * A read recorded for the sliding `Stream-TTL` (no data): the stream's
   * last access as the ledger knows it is its newest entry's commit time.
   */
  readonly touch?: true;
  /** With `deleted`: the retention pass removed the stream once it had expired. */
  readonly expired?: true;
}

/** A stream's configuration, fixed when it is created. */
export interface StreamConfig {
  /** Content type as given (parameters kept), compared case-insensitively. */
  readonly type: string;
  /** Sliding time-to-live, seconds. */
  readonly ttl?: number;
  /** Absolute expiry, RFC 3339 as given. */
  readonly expiresAt?: string;
  /** For a fork: where it diverges from its source. */
  readonly fork?: ForkConfig;
}

/** Where a fork's inherited data comes from. */
export interface ForkConfig {
  /** The source stream's name. */
  readonly from: string;
  /** The source's ledger sequence of the entry that created it (-1: a plain track). */
  readonly start: number;
  /** The fork point: the source position up to which data is inherited. */
  readonly at: number;
  /** The Stream-Fork-Sub-Offset asked for (0 when absent); its data is in the fork's first entry. */
  readonly sub: number;
  /** The Stream-Fork-Offset as asked for, to recognise a repeated PUT. */
  readonly offset?: string;
}

/** Encodes metadata, or undefined when there is none. */
export function formatMeta(meta: EntryMeta): string | undefined {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta)) if (value !== undefined) out[key] = value;
  return Object.keys(out).length === 0 ? undefined : JSON.stringify(out);
}

/** Reads an entry's metadata; text that is not ours reads as none. */
export function parseMeta(text: string | undefined): EntryMeta {
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * True when an entry's metadata is stream state retention must keep with
 * what follows: a stream's creation (so a created stream keeps all of its
 * entries, producers' and `Stream-Seq` ones included), closure or deletion.
 * A producer, a `Stream-Seq` or a message count alone does not stop a plain
 * track's retention: its producers' state goes with their entries.
 */
export function pinsStream(text: string | undefined): boolean {
  if (text === undefined) return false;
  const meta = parseMeta(text);
  return meta.create !== undefined || meta.closed === true || meta.deleted === true;
}
