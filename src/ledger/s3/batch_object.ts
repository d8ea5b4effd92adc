// One batch object of the S3 backend: its key, its checksum and, once compaction
// rewrote it, the span of sequences it stands for (key layout in s3_backend.ts).
import {
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { decodeBatch, encodeBatch } from "../codec.ts";
import { crc32 } from "../directory/mod.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { getObject } from "./map_limited.ts";

/** A batch object whose body does not match its checksum or its key. */
export class TornBatch extends LedgerError {
  /** The damaged object `key`. */
  constructor(key: string) {
    super("corrupt", `Batch object ${key} is damaged or incomplete`);
  }
}

/**
 * A batch object damaged or incomplete although the store answered its PUT: the store
 * acknowledges writes before it holds them whole, and the ledger cannot keep its promise.
 */
export function acknowledgedTorn(key: string): LedgerError {
  return new LedgerError(
    "corrupt",
    `Batch object ${key} is damaged or incomplete, though the store acknowledged writing it ` +
      "(does the store answer a PUT before the object is stored whole?)",
  );
}

const CRC_META = "sluice-crc32";
// Written by compaction only: `<first>-<last>`, the sequences the batch was committed with.
// Its body then holds the records still kept among them (possibly none, an empty body).
const SPAN_META = "sluice-span";

// A rewrite's copy beside its batch (never parsed as a batch key): written whole before the
// batch is overwritten, and deleted after, so a store that keeps an upload cut short by a
// dying writer (s3rver does; real S3 does not) never loses the batch.
const REWRITE = ".rewrite";

const INVERT = 9_999_999_999_999_999n;

/**
 * The key part naming a batch by its first seq alone, so two batches that
 * take the same seq (a late write and the batch that re-read the tail after
 * it timed out) race on one key, and the conditional PUT lets one exist.
 */
export function batchKeyPart(first: number): string {
  return (INVERT - BigInt(first)).toString().padStart(16, "0");
}

// A key part, or undefined; objects written before keys were per first seq also name their last.
function parseBatchKey(part: string): { first: number; last?: number } | undefined {
  const match = /^(\d{16})(?:-(\d{16}))?$/.exec(part);
  if (!match) return undefined;
  const first = Number(INVERT - BigInt(match[1]!));
  return match[2] === undefined ? { first } : { first, last: Number(match[2]) };
}

/** A batch object as listed. */
export interface BatchRef {
  readonly key: string;
  readonly first: number;
  /** From the key, or the next batch's first seq minus one; unknown for the newest batch. */
  readonly last: number | undefined;
  /** True when `last` came from the key and must match the body. */
  readonly named: boolean;
}

/**
 * The batch objects under `prefix` holding seqs below `before` (all when
 * undefined), newest first, listed `max` at a time (at most 1,000); the
 * rewrite copies met are added to `rewrites`.
 */
export async function* listBatches(
  client: S3Client,
  bucket: string,
  prefix: string,
  before: number | undefined,
  max: number,
  signal: () => AbortSignal,
  rewrites?: { key: string; first: number }[],
): AsyncGenerator<BatchRef> {
  if (before !== undefined && before <= 0) return;
  let token: string | undefined;
  let newer: number | undefined;
  const startAfter = before === undefined ? undefined : `${prefix}${batchKeyPart(before)}~`;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: prefix,
        MaxKeys: Math.min(1000, Math.max(1, max)),
        ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}),
      }),
      { abortSignal: signal() },
    );
    for (const object of page.Contents ?? []) {
      const key = object.Key ?? "";
      const part = key.slice(prefix.length);
      const range = parseBatchKey(part);
      if (!range) {
        const stem = part.endsWith(REWRITE)
          ? parseBatchKey(part.slice(0, -REWRITE.length))
          : undefined;
        if (stem) rewrites?.push({ key, first: stem.first });
        continue;
      }
      // Batches are consecutive: one ends where the newer one listed before it starts.
      const last = range.last ?? (newer === undefined ? undefined : newer - 1);
      newer = range.first;
      yield { key, first: range.first, last, named: range.last !== undefined };
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** A batch object as read: the records it holds and the span it was committed with. */
export interface StoredBatch {
  readonly entries: LedgerEntry[];
  /** The span's last seq: the newest record's, unless compaction removed that one. */
  readonly last: number;
  /** Present once compaction rewrote the object (kept when it is rewritten again). */
  readonly span?: { readonly first: number; readonly last: number };
  /** Read from the rewrite copy: the batch object itself was cut short (rewrite it). */
  readonly repaired?: boolean;
}

/**
 * Reads and checks one batch object, or its rewrite copy when the object
 * was cut short while being rewritten; undefined when it is gone.
 */
export async function readBatch(
  client: S3Client,
  bucket: string,
  ref: BatchRef,
  signal: AbortSignal,
): Promise<StoredBatch | undefined> {
  const object = await getObject(client, bucket, ref.key, signal);
  if (!object) return undefined;
  try {
    return checkBatch(ref, object);
  } catch (error) {
    if (!(error instanceof TornBatch)) throw error;
    const copy = await getObject(client, bucket, ref.key + REWRITE, signal);
    if (!copy) throw error;
    return { ...checkBatch(ref, copy), repaired: true };
  }
}

function checkBatch(
  ref: BatchRef,
  object: { body: Uint8Array; metadata: Record<string, string> },
): StoredBatch {
  if (object.metadata[CRC_META] !== crc32(object.body).toString(16)) throw new TornBatch(ref.key);
  const span = parseSpan(ref.key, object.metadata[SPAN_META]);
  let entries: LedgerEntry[];
  try {
    entries = span && object.body.length === 0 ? [] : decodeBatch(object.body);
  } catch {
    throw new TornBatch(ref.key);
  }
  const first = span?.first ?? entries[0]!.seq;
  const last = span?.last ?? entries[entries.length - 1]!.seq;
  if (first !== ref.first || (ref.named && last !== ref.last)) throw new TornBatch(ref.key);
  if (span) {
    // What compaction kept: ascending, inside the span.
    let previous = first - 1;
    for (const entry of entries) {
      if (entry.seq <= previous || entry.seq > last) throw new TornBatch(ref.key);
      previous = entry.seq;
    }
  }
  if (ref.last !== undefined && last !== ref.last) {
    // Whole and checksummed, but it does not reach the next batch: records are missing (or
    // held twice). Only a write the store let replace a batch (a store that ignores
    // If-None-Match) leaves this; a page must fail here, not end or skip silently.
    throw new LedgerError(
      "corrupt",
      `Batch object ${ref.key} ends at sequence ${last}, but the next batch starts at ${
        ref.last + 1
      }: the ledger has lost records (does the store honour If-None-Match?)`,
    );
  }
  return span ? { entries, last, span } : { entries, last };
}

function parseSpan(key: string, text: string | undefined): StoredBatch["span"] {
  if (text === undefined) return undefined;
  const match = /^(\d{1,16})-(\d{1,16})$/.exec(text);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || last < first) {
    throw new LedgerError("corrupt", `Batch object ${key} has a damaged span "${text}"`);
  }
  return { first, last };
}

/**
 * Rewrites a batch object in place (a redaction, a compaction): first its
 * copy, then the object, then the copy goes. Killed at any point, the batch
 * reads old or new, whole.
 */
export async function rewriteBatch(
  client: S3Client,
  bucket: string,
  key: string,
  entries: readonly LedgerEntry[],
  options: { span?: StoredBatch["span"]; signal: AbortSignal },
): Promise<void> {
  await putBatch(client, bucket, key + REWRITE, entries, { ...options, create: false });
  await putBatch(client, bucket, key, entries, { ...options, create: false });
  await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key + REWRITE }), {
    abortSignal: options.signal,
  });
}

/**
 * PUTs a batch object. `create`: only if no object has the key
 * (If-None-Match: *), so nothing acknowledged is ever replaced; a redaction
 * or compaction rewrites its object in place, with `span` once compacted.
 */
export async function putBatch(
  client: S3Client,
  bucket: string,
  key: string,
  entries: readonly LedgerEntry[],
  options: { create: boolean; span?: StoredBatch["span"]; signal: AbortSignal },
): Promise<void> {
  const body = entries.length === 0 ? new Uint8Array() : encodeBatch(entries);
  const span = options.span;
  await client.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: body,
      ContentType: "application/json",
      Metadata: {
        [CRC_META]: crc32(body).toString(16),
        ...(span ? { [SPAN_META]: `${span.first}-${span.last}` } : {}),
      },
      ...(options.create ? { IfNoneMatch: "*" } : {}),
    }),
    { abortSignal: options.signal },
  );
}
