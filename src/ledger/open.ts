import type { LedgerBackend } from "./backend.ts";
import { DirectoryBackend } from "./directory/mod.ts";
import type { LedgerLocation, StoreCredentials } from "../config/mod.ts";
import { MemoryBackend } from "./memory/mod.ts";

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
      return await DirectoryBackend.open(
        location.dir,
        location.openTracks === undefined ? {} : { openTracks: location.openTracks },
      );
    case "postgres": {
      // Loaded here, not at the top, so a program that never uses PostgreSQL
      // never loads its driver.
      const { PostgresBackend } = await import("./postgres/mod.ts");
      return await PostgresBackend.open(location.url, location.table);
    }
    case "s3": {
      // The AWS SDK is large: loaded only when an S3 ledger is opened.
      const { S3Backend } = await import("./s3/mod.ts");
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
