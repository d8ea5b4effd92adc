import {
  DeleteObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import type { LedgerBackend, TrackBackend } from "./backend.ts";
import { decodeBatch, encodeBatch, withoutPayload } from "./codec.ts";
import { crc32 } from "./crc32.ts";
import type { LedgerEntry } from "./entry.ts";
import { LedgerError } from "./errors.ts";
import type { StoreCredentials } from "./open.ts";
import { getObject, mapLimited, status, translate } from "./s3_requests.ts";
import { Serial } from "./serial.ts";
import { decodeStorageName, isHashedName, pathFromKey, trackStorageName } from "./storage_name.ts";
import { trackKey, type TrackPath } from "./track_path.ts";

/*
 * Key layout under the prefix (`<p>/` below, empty when there is none):
 *
 *   <p>tracks/<name>                       marker: the track exists (body: track path)
 *   <p>data/<name>/<inv first>-<last>      one object per committed batch
 *
 * `name` comes from trackStorageName, so it is one safe key segment whatever
 * the track path holds. `inv first` is 9999999999999999 minus the batch's
 * first seq, zero-padded to 16 digits, so a plain ascending listing returns
 * the newest batch first: `latest()` is one LIST with MaxKeys=1 and one GET,
 * and a page `before` N starts listing after `<inv N>~`, i.e. at the batch
 * holding N-1, reading only the objects that page needs. A PUT is atomic, so
 * a batch is visible whole or not at all; `append` resolves only after the
 * PUT completed. Redaction GETs the batch object holding the record and PUTs
 * it back without the payload (on a bucket without versioning the old bytes
 * are gone; with versioning enabled old versions would keep them).
 *
 * Every batch object carries the CRC-32 of its body in its metadata. Real S3
 * never stores a cut-short upload, but some S3-compatible servers do when the
 * writer dies mid-PUT; such an object was never acknowledged, so `latest()`
 * (run when a track opens and after a failed append) deletes a newest object
 * that fails its checksum, and pages skip a newest one still being written.
 */

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

/** Options of {@link S3Backend.open}. */
export interface S3Options {
  /** Bucket name; it must exist. */
  readonly bucket: string;
  /** Key prefix without leading or trailing slash; empty for the bucket root. */
  readonly prefix: string;
  /** Region for request signing. */
  readonly region: string;
  /** An S3-compatible endpoint; path-style addressing is used with it. */
  readonly endpoint?: string;
  /** Explicit credentials; without them the SDK's default chain applies. */
  readonly credentials?: StoreCredentials;
}

/** Stores every track as one object per committed batch in an S3 bucket. */
export class S3Backend implements LedgerBackend {
  /** Backend name. */
  readonly name = "s3";
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #base: string;
  readonly #open = new Map<string, S3Track>();

  private constructor(client: S3Client, bucket: string, base: string) {
    this.#client = client;
    this.#bucket = bucket;
    this.#base = base;
  }

  /** Connects and checks the bucket is reachable. */
  static async open(options: S3Options): Promise<S3Backend> {
    const client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
      maxAttempts: 2,
      requestHandler: { connectionTimeout: 3000, requestTimeout: 15000 },
    });
    try {
      await client.send(new HeadBucketCommand({ Bucket: options.bucket }));
    } catch (error) {
      client.destroy();
      throw translate(error, `Cannot reach bucket "${options.bucket}"`);
    }
    const base = options.prefix === "" ? "" : `${options.prefix}/`;
    return new S3Backend(client, options.bucket, base);
  }

  /** Lists tracks from their marker objects (GETs only for hashed long names). */
  async listTracks(): Promise<TrackPath[]> {
    const out: TrackPath[] = [];
    const prefix = `${this.#base}tracks/`;
    let token: string | undefined;
    try {
      do {
        const page = await this.#client.send(
          new ListObjectsV2Command({
            Bucket: this.#bucket,
            Prefix: prefix,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
        for (const object of page.Contents ?? []) {
          const name = object.Key?.slice(prefix.length) ?? "";
          let path = decodeStorageName(name);
          if (!path && isHashedName(name)) {
            const marker = await getObject(this.#client, this.#bucket, object.Key!);
            if (marker) path = pathFromKey(new TextDecoder().decode(marker.body));
          }
          if (path) out.push(path);
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } catch (error) {
      throw translate(error, "Cannot list ledger tracks");
    }
    return out;
  }

  /** Opens a track; with `create` writes its marker object. */
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const name = await trackStorageName(path);
    const cached = this.#open.get(name);
    if (cached) return cached;
    const marker = `${this.#base}tracks/${name}`;
    try {
      if (create) {
        await this.#client.send(
          new PutObjectCommand({ Bucket: this.#bucket, Key: marker, Body: trackKey(path) }),
        );
      } else {
        try {
          await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: marker }));
        } catch (error) {
          if (status(error) === 404) return undefined;
          throw error;
        }
      }
    } catch (error) {
      throw translate(error, "Cannot open the ledger track");
    }
    const track = this.#open.get(name) ??
      new S3Track(this.#client, this.#bucket, `${this.#base}data/${name}/`);
    this.#open.set(name, track);
    return track;
  }

  /** Releases the client's sockets. */
  close(): Promise<void> {
    this.#client.destroy();
    return Promise.resolve();
  }
}

interface BatchRef {
  readonly key: string;
  readonly first: number;
  readonly last: number;
}

class S3Track implements TrackBackend {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #erasing = new Serial();

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
            if (entry.seq !== seq || entry.payload === undefined) return entry;
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
