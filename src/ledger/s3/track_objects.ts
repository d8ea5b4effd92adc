import {
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { TrackBackend } from "../backend.ts";
import { decodeBatch, encodeBatch, withoutPayload } from "../codec.ts";
import { crc32 } from "../directory/mod.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { getObject, mapLimited, translate } from "./map_limited.ts";
import { Serial } from "../serial.ts";

// One track of the S3 backend: its batch objects (key layout in s3.ts).

/** A batch object whose body does not match its checksum or its key. */
class TornBatch extends LedgerError {
  constructor(key: string) {
    super("corrupt", `Batch object ${key} is damaged or incomplete`);
  }
}

const CRC_META = "sluice-crc32";

const INVERT = 9_999_999_999_999_999n;

function batchKeyPart(first: number, last: number): string {
  return `${(INVERT - BigInt(first)).toString().padStart(16, "0")}-${
    String(last).padStart(16, "0")
  }`;
}

function parseBatchKey(part: string): { first: number; last: number } | undefined {
  const match = /^(\d{16})-(\d{16})$/.exec(part);
  if (!match) return undefined;
  return { first: Number(INVERT - BigInt(match[1]!)), last: Number(match[2]) };
}

interface BatchRef {
  readonly key: string;
  readonly first: number;
  readonly last: number;
}

/** The batch objects of one track under its key prefix. */
export class S3Track implements TrackBackend {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #erasing = new Serial();

  /** A track whose batch objects live under `prefix` in `bucket`. */
  constructor(client: S3Client, bucket: string, prefix: string) {
    this.#client = client;
    this.#bucket = bucket;
    this.#prefix = prefix;
  }

  async append(entries: readonly LedgerEntry[]): Promise<void> {
    const first = entries[0];
    const last = entries[entries.length - 1];
    if (!first || !last) return;
    try {
      await this.#putBatch(this.#prefix + batchKeyPart(first.seq, last.seq), entries);
    } catch (error) {
      throw translate(error, "Cannot append to the ledger");
    }
  }

  async #putBatch(key: string, entries: readonly LedgerEntry[]): Promise<void> {
    const body = encodeBatch(entries);
    await this.#client.send(
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: key,
        Body: body,
        ContentType: "application/json",
        Metadata: { [CRC_META]: crc32(body).toString(16) },
      }),
    );
  }

  async latest(): Promise<LedgerEntry | undefined> {
    try {
      // Each pass removes one torn leftover; only the newest object can be one.
      for (let attempt = 0; attempt < 4; attempt++) {
        let newest: BatchRef | undefined;
        for await (const ref of this.#batches(undefined, 1)) {
          newest = ref;
          break;
        }
        if (!newest) return undefined;
        try {
          const entries = await this.#readBatch(newest);
          return entries[entries.length - 1];
        } catch (error) {
          if (!(error instanceof TornBatch)) throw error;
          await this.#client.send(
            new DeleteObjectCommand({ Bucket: this.#bucket, Key: newest.key }),
          );
        }
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    throw new LedgerError("corrupt", `The newest batches under ${this.#prefix} are damaged`);
  }

  /** Batches holding seqs below `before`, newest first, `max` refs per listing page. */
  async *#batches(before: number | undefined, max: number): AsyncGenerator<BatchRef> {
    if (before !== undefined && before <= 0) return;
    let token: string | undefined;
    const startAfter = before === undefined
      ? undefined
      : `${this.#prefix}${(INVERT - BigInt(before)).toString().padStart(16, "0")}~`;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: this.#prefix,
          MaxKeys: Math.min(1000, Math.max(1, max)),
          ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}),
        }),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key ?? "";
        const range = parseBatchKey(key.slice(this.#prefix.length));
        if (range) yield { key, ...range };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async #readBatch(ref: BatchRef): Promise<LedgerEntry[]> {
    const object = await getObject(this.#client, this.#bucket, ref.key);
    if (!object) return [];
    if (object.metadata[CRC_META] !== crc32(object.body).toString(16)) throw new TornBatch(ref.key);
    let entries: LedgerEntry[];
    try {
      entries = decodeBatch(object.body);
    } catch {
      throw new TornBatch(ref.key);
    }
    if (entries[0]!.seq !== ref.first || entries[entries.length - 1]!.seq !== ref.last) {
      throw new TornBatch(ref.key);
    }
    return entries;
  }

  async readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    if (limit <= 0) return out;
    try {
      // The keys tell which seqs each object holds, so list first, then fetch exactly the
      // objects the page needs, several at a time.
      const refs: BatchRef[] = [];
      let covered = 0;
      for await (const ref of this.#batches(before, limit)) {
        refs.push(ref);
        const top = before === undefined ? ref.last : Math.min(ref.last, before - 1);
        covered += Math.max(0, top - ref.first + 1);
        if (covered >= limit) break;
      }
      const batches = await mapLimited(refs, READ_CONCURRENCY, async (ref, i) => {
        try {
          return await this.#readBatch(ref);
        } catch (error) {
          // The newest object may be a PUT still in progress on some servers: not committed yet.
          if (i === 0 && before === undefined && error instanceof TornBatch) return [];
          throw error;
        }
      });
      for (const entries of batches) {
        for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
          const entry = entries[i]!;
          if (before === undefined || entry.seq < before) out.push(entry);
        }
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    return out;
  }

  async readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    if (limit <= 0) return out;
    const from = Math.max(0, (after ?? -1) + 1);
    const to = from + limit; // exclusive
    try {
      // A listing only ascends, which is newest first here: list from the batch holding
      // `to - 1` down to the one holding `from`, then fetch exactly those objects.
      const refs: BatchRef[] = [];
      for await (const ref of this.#batches(to, limit)) {
        if (ref.last < from) break;
        refs.push(ref);
        if (ref.first <= from) break;
      }
      refs.reverse();
      const newest = refs.length - 1;
      const batches = await mapLimited(refs, READ_CONCURRENCY, async (ref, i) => {
        try {
          return await this.#readBatch(ref);
        } catch (error) {
          // The track's newest object may be a PUT still in progress on some servers.
          if (i === newest && error instanceof TornBatch && await this.#isNewest(ref)) return [];
          throw error;
        }
      });
      for (const entries of batches) {
        for (const entry of entries) if (entry.seq >= from && entry.seq < to) out.push(entry);
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    return out;
  }

  async #isNewest(ref: BatchRef): Promise<boolean> {
    for await (const newest of this.#batches(undefined, 1)) return newest.key === ref.key;
    return false;
  }

  async get(seq: number): Promise<LedgerEntry | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    const found = (await this.readBefore(seq + 1, 1))[0];
    return found?.seq === seq ? found : undefined;
  }

  erasePayload(seq: number): Promise<void> {
    // Serialised so two erasures in one batch object never overwrite each other.
    return this.#erasing.run(async () => {
      try {
        for await (const ref of this.#batches(seq + 1, 1)) {
          if (seq < ref.first || seq > ref.last) return;
          const entries = await this.#readBatch(ref);
          let found = false;
          const rewritten = entries.map((entry) => {
            if (entry.seq !== seq || (entry.payload ?? entry.bytes) === undefined) return entry;
            found = true;
            return withoutPayload(entry);
          });
          if (!found) return;
          await this.#putBatch(ref.key, rewritten);
          return;
        }
      } catch (error) {
        throw translate(error, "Cannot redact in the ledger");
      }
    });
  }
}

/** Objects fetched at once for one history page. */
const READ_CONCURRENCY = 16;
