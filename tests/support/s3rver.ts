import { S3Client } from "@aws-sdk/client-s3";
import crypto from "node:crypto";
import fs from "node:fs";
import { dirname } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import S3rver from "s3rver";

// s3rver encrypts listing continuation tokens with DES, which Deno's node:crypto
// lacks, so every truncated listing would fail with a 500. The token is opaque
// to clients; map "des" onto AES-128-CTR (any IV length works once padded) for
// both directions so s3rver runs unmodified in-process.
type CipherFactory = (algorithm: string, key: Uint8Array, iv: Uint8Array) => unknown;
const c = crypto as unknown as { createCipheriv: CipherFactory; createDecipheriv: CipherFactory };
for (const name of ["createCipheriv", "createDecipheriv"] as const) {
  const original = c[name].bind(crypto);
  c[name] = (algorithm, key, iv) => {
    if (algorithm !== "des") return original(algorithm, key, iv);
    const widen = (b: Uint8Array): Uint8Array =>
      Uint8Array.from({ length: 16 }, (_, i) => b[i % b.length]!);
    return original("aes-128-ctr", widen(key), widen(iv));
  };
}

// What s3rver's filesystem store is given for one PUT (lib/stores/filesystem.js).
interface StoredPut {
  readonly bucket: string;
  readonly key: string;
  readonly content: Readable | Uint8Array;
  readonly metadata: Record<string, string>;
}
interface FilesystemStore {
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: object, md5: string): Promise<void>;
  putObject(object: StoredPut): Promise<{ size: number; md5: string }>;
}

/*
 * s3rver 3.7 answers a PUT before its object is written: its store resolves
 * once the body has gone through the MD5 hash, while the file stream behind
 * it may not even have opened the file, and a GET right after the 200 then
 * reads an empty or short body under the new metadata (a batch failing its
 * checksum): at load average 21, 2 PUTs in 100 were answered with the file
 * still empty. A real store answers once the object is stored whole,
 * which the ledger relies on, so the store here answers once the file stream
 * has finished. Nothing else changes: the file is still filled in place (a
 * GET during a PUT sees part of it) and an upload cut short still leaves its
 * part behind without the new metadata, as s3rver does.
 */
function answerWhenStored(store: FilesystemStore): void {
  store.putObject = async (object) => {
    const path = store.getResourcePath(object.bucket, object.key, "object");
    await fs.promises.mkdir(dirname(path), { recursive: true });
    const md5 = crypto.createHash("md5");
    let size = 0;
    const hashed = new Transform({
      transform(chunk: Uint8Array, _encoding, done): void {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    const content = object.content instanceof Uint8Array
      ? Readable.from([object.content])
      : object.content;
    await pipeline(content, hashed, fs.createWriteStream(path));
    const digest = md5.digest("hex");
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}

/** A running s3rver with one bucket, storing its objects under `dir`. */
export interface TestS3 {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly bucket: string;
  /** Directory where s3rver keeps object bytes (to check erasure on disk). */
  readonly dir: string;
  /** s3rver's fixed development credentials. */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** S3Backend options for a ledger under `prefix` in the bucket. */
  backendOptions(prefix: string): {
    bucket: string;
    prefix: string;
    region: string;
    endpoint: string;
    credentials: { accessKeyId: string; secretAccessKey: string };
  };
  /** The LEDGER_URI of a ledger under `prefix` in the bucket. */
  ledgerUri(prefix: string): string;
  /** A path-style S3 client for this server (destroy it when done). */
  client(): S3Client;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/** Starts s3rver in-process on an ephemeral port in a fresh temp directory. */
export async function startS3rver(bucket = "ledger-test"): Promise<TestS3> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-s3rver-" });
  const server = new S3rver({
    port: 0,
    address: "127.0.0.1",
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket }],
  });
  answerWhenStored((server as unknown as { store: FilesystemStore }).store);
  const address = await server.run() as { address: string; port: number };
  const endpoint = `http://127.0.0.1:${address.port}`;
  const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
  const region = "us-east-1";
  return {
    endpoint,
    bucket,
    dir,
    credentials,
    backendOptions: (prefix) => ({ bucket, prefix, region, endpoint, credentials }),
    ledgerUri: (prefix) =>
      `s3://${bucket}/${prefix}?region=${region}&endpoint=${encodeURIComponent(endpoint)}`,
    client: () => new S3Client({ region, endpoint, forcePathStyle: true, credentials }),
    async stop(): Promise<void> {
      const closing = server.close();
      // A client killed in the middle of an upload leaves its request waiting for a body
      // that never comes (up to the server's 2-minute timeout): do not wait for it.
      (server as unknown as { httpServer?: { closeAllConnections?(): void } }).httpServer
        ?.closeAllConnections?.();
      await closing;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
