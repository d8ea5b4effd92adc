import {
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { FetchHttpHandler } from "@smithy/fetch-http-handler";
import type { LedgerBackend, TrackBackend } from "../backend.ts";
import type { StoreCredentials } from "../../config/mod.ts";
import { getObject, status, translate } from "./map_limited.ts";
import { S3Track } from "./track_objects.ts";
import { decodeStorageName, isHashedName, pathFromKey, trackStorageName } from "../storage_name.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";

/*
 * Key layout under the prefix (`<p>/` below, empty when there is none):
 *
 *   <p>tracks/<name>                       marker: the track exists (body: track path)
 *   <p>data/<name>/<inv first>             one object per committed batch
 *                                          (`<inv first>-<last>` when written before keys
 *                                          named only the first seq; both are read)
 *
 * `name` comes from trackStorageName, so it is one safe key segment whatever
 * the track path holds. `inv first` is 9999999999999999 minus the batch's
 * first seq, zero-padded to 16 digits, so a plain ascending listing returns
 * the newest batch first: `latest()` is one LIST with MaxKeys=1 and one GET,
 * and a page `before` N starts listing after `<inv N>~`, i.e. at the batch
 * holding N-1, reading only the objects that page needs. Batches are
 * consecutive, so a listing tells each batch's last seq (the newer one's first
 * minus one) except the newest's. A PUT is atomic, so a batch is visible whole
 * or not at all; `append` resolves only after the PUT completed. A batch PUT
 * is conditional (If-None-Match: *): a late PUT, given up on at the storage
 * deadline, can never replace the batch that took its sequence after it, and
 * loses with a 412 instead. Redaction GETs the batch object holding the record
 * and PUTs it back without the payload (on a bucket without versioning the old
 * bytes are gone; with versioning enabled old versions would keep them).
 *
 * Every batch object carries the CRC-32 of its body in its metadata. Real S3
 * never stores a cut-short upload, but some S3-compatible servers do when the
 * writer dies mid-PUT; such an object was never acknowledged, so `latest()`
 * (run when a track opens and after a failed append) deletes a newest object
 * that fails its checksum, and pages skip a newest one still being written.
 * Not one whose PUT the store answered to this process: that store broke its
 * promise, and the commit or read meeting it fails as corrupt instead.
 *
 * A forward page (`readAfter`) lists the same way from the batch holding its
 * last seq down to the one holding its first, since a listing only ascends.
 *
 * Compaction rewrites a batch object in place without the records it
 * removes (possibly all of them: the object stays, since it marks where the
 * batch ends), naming the span it was committed with in its metadata. Every
 * rewrite (redaction, compaction) PUTs a copy beside the batch first
 * (`<inv first>.rewrite`, which no listing takes for a batch) and deletes it
 * after, so a store keeping an upload cut short still holds the batch whole.
 *
 * Code: one track's objects are in track_objects.ts, one batch object's key,
 * checks and rewrite in batch_object.ts, the request helpers in
 * map_limited.ts.
 */

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
  // Aborted and replaced by abandon(): every request in flight then fails.
  #calls = new AbortController();

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
      // fetch, not node:http: under Deno an aborted node:http request on a kept-alive
      // connection is sent again on a new one, so abandon() would cause the very late
      // write it is meant to stop.
      requestHandler: new FetchHttpHandler({ requestTimeout: 15000 }),
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
      new S3Track(
        this.#client,
        this.#bucket,
        `${this.#base}data/${name}/`,
        () => this.#calls.signal,
      );
    this.#open.set(name, track);
    return track;
  }

  /**
   * A call passed its deadline and was answered unavailable: aborts every
   * request in flight rather than letting them run on (15 s per attempt,
   * two attempts). An aborted PUT may still land if the store received it;
   * being conditional, it can never replace an acknowledged batch.
   */
  abandon(): void {
    this.#calls.abort(new Error("The storage deadline passed"));
    this.#calls = new AbortController();
  }

  /** Releases the client's sockets. */
  close(): Promise<void> {
    this.#client.destroy();
    return Promise.resolve();
  }
}
