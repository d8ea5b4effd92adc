import type { LedgerBackend } from "./backend.ts";
import { DirectoryBackend } from "./directory/directory_backend.ts";
import type { LedgerLocation } from "../config/ledger_location.ts";
import { MemoryBackend } from "./memory/memory_backend.ts";

/** Object-store credentials (from STORE_ACCESS_KEY_ID and friends, read by config). */
export interface StoreCredentials {
  /** Access key id (AWS_ACCESS_KEY_ID). */
  readonly accessKeyId: string;
  /** Secret access key (AWS_SECRET_ACCESS_KEY). */
  readonly secretAccessKey: string;
  /** Session token for temporary credentials (AWS_SESSION_TOKEN). */
  readonly sessionToken?: string;
}

/**
 * Opens the backend a location names: creates the directory or the table if
 * missing, checks the bucket is reachable. Throws `LedgerError("unavailable")`
 * when the database or object store cannot be reached.
 *
 * @example
 * ```ts
 * const backend = await openBackend(parseLedgerUri("file:data/ledger"));
 * const ledger = new Ledger(backend);
 * ```
 */
export async function openBackend(
  location: LedgerLocation,
  credentials?: StoreCredentials,
): Promise<LedgerBackend> {
  switch (location.kind) {
    case "memory":
      return new MemoryBackend();
    case "directory":
      return await DirectoryBackend.open(location.dir);
    case "postgres": {
      // Loaded here, not at the top, so a program that never uses PostgreSQL
      // never loads its driver.
      const { PostgresBackend } = await import("./postgres/postgres_backend.ts");
      return await PostgresBackend.open(location.url, location.table);
    }
    case "s3": {
      // The AWS SDK is large: loaded only when an S3 ledger is opened.
      const { S3Backend } = await import("./s3/s3_backend.ts");
      return await S3Backend.open({
        bucket: location.bucket,
        prefix: location.prefix,
        region: location.region,
        ...(location.endpoint === undefined ? {} : { endpoint: location.endpoint }),
        ...(credentials === undefined ? {} : { credentials }),
      });
    }
  }
}
