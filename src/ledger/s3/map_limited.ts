// The request helpers S3Backend is built on: a GET that reads a missing object
// as undefined, the status of an SDK error, its translation into ledger
// errors, and a bounded-concurrency map for reading a page's batch objects.
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { LedgerError } from "../errors.ts";

/** Runs `f` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  f: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** GETs an object with its metadata; undefined when it does not exist. */
export async function getObject(
  client: S3Client,
  bucket: string,
  key: string,
  signal?: AbortSignal,
): Promise<{ body: Uint8Array; metadata: Record<string, string> } | undefined> {
  try {
    const result = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: key }),
      signal ? { abortSignal: signal } : {},
    );
    const body = result.Body ? await result.Body.transformToByteArray() : new Uint8Array();
    return { body, metadata: result.Metadata ?? {} };
  } catch (error) {
    if (status(error) === 404) return undefined;
    throw error;
  }
}

/** The HTTP status of an S3 SDK error, if it carries one. */
export function status(error: unknown): number | undefined {
  const code = (error as { $metadata?: { httpStatusCode?: unknown } })?.$metadata?.httpStatusCode;
  return typeof code === "number" ? code : undefined;
}

/** Network failures and 5xx answers become `LedgerError("unavailable")`. */
export function translate(error: unknown, message: string): Error {
  if (error instanceof LedgerError) return error;
  const code = status(error);
  if (code === undefined || code >= 500) {
    return new LedgerError("unavailable", `${message}: the object store is unreachable`, {
      cause: error,
    });
  }
  const why = code === 404
    ? "the bucket or object does not exist"
    : code === 403 || code === 401
    ? "access denied (check STORE_ACCESS_KEY_ID and STORE_SECRET_ACCESS_KEY)"
    : `the object store answered ${code}`;
  return new Error(`${message}: ${why}`, { cause: error });
}
