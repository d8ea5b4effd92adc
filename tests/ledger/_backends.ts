import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import {
  DirectoryBackend,
  type LedgerBackend,
  MemoryBackend,
  type StoreCredentials,
} from "../../src/ledger/mod.ts";
import { PostgresBackend } from "../../src/ledger/postgres/postgres_backend.ts";
import { S3Backend } from "../../src/ledger/s3/s3_backend.ts";
import {
  dropTable,
  findPostgres,
  freshTableName,
  postgresMissing,
  withSql,
} from "../support/postgres.ts";
import type { Service } from "../support/requires.ts";
import { startS3rver, type TestS3 } from "../support/s3rver.ts";

/** One backend's storage for a test: open it as often as needed, inspect its raw bytes. */
export interface BackendInstance {
  /** Opens a backend over this storage (a fresh instance each call, except memory). */
  open(): Promise<LedgerBackend>;
  /** Whether `text` appears anywhere in the raw stored bytes (files, rows, objects). */
  rawContains(text: string): Promise<boolean>;
  /** Every raw storage location name (file paths, object keys); for escape checks. */
  rawNames(): Promise<string[]>;
  /** Where stored names must stay (a directory or key prefix); undefined when not applicable. */
  readonly container?: string;
  /**
   * The LEDGER_URI a separate process opens this storage by, at the shipped
   * defaults (and its credentials); undefined for memory, and for a variant
   * whose options a URI cannot carry.
   */
  readonly uri?: string;
  readonly credentials?: StoreCredentials;
  /** Removes the storage. */
  cleanup(): Promise<void>;
}

/** A backend under test. */
export interface BackendHarness {
  readonly name: string;
  /** The outside service it needs, and why that is missing (undefined when it is there). */
  readonly needs?: { readonly service: Service; readonly missing: string | undefined };
  setup(): Promise<BackendInstance>;
}

const pgUrl = await findPostgres();

/** Every file below `dir`, recursively (paths relative to `dir`). */
export async function walkFiles(dir: string, base = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const item of Deno.readDir(`${dir}/${base}`)) {
    const rel = base ? `${base}/${item.name}` : item.name;
    if (item.isDirectory) out.push(...await walkFiles(dir, rel));
    else out.push(rel);
  }
  return out;
}

async function filesContain(dir: string, text: string): Promise<boolean> {
  const needle = new TextEncoder().encode(text);
  for (const file of await walkFiles(dir)) {
    const bytes = await Deno.readFile(`${dir}/${file}`);
    if (indexOf(bytes, needle) >= 0) return true;
  }
  return false;
}

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Every object key in the test server's bucket. */
async function objectKeys(s3: TestS3): Promise<string[]> {
  const client = s3.client();
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: s3.bucket,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      keys.push(...(page.Contents ?? []).map((o) => o.Key ?? ""));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  } finally {
    client.destroy();
  }
}

/** The four backends, each with a way to look at its raw storage. */
export const HARNESSES: readonly BackendHarness[] = [
  {
    name: "memory",
    setup(): Promise<BackendInstance> {
      const backend = new MemoryBackend();
      const unclosable: LedgerBackend = {
        name: backend.name,
        listTracks: () => backend.listTracks(),
        openTrack: (p, c) => backend.openTrack(p, c),
        close: () => Promise.resolve(),
      };
      return Promise.resolve({
        open: () => Promise.resolve(unclosable),
        async rawContains(text: string): Promise<boolean> {
          for (const path of await backend.listTracks()) {
            const track = await backend.openTrack(path, false);
            const all = await track!.readBefore(undefined, Number.MAX_SAFE_INTEGER);
            if (all.some((e) => JSON.stringify({ ...e, wallclock: 0 }).includes(text))) return true;
          }
          return false;
        },
        rawNames: () => Promise.resolve([]),
        cleanup: () => Promise.resolve(),
      });
    },
  },
  {
    name: "directory",
    async setup(): Promise<BackendInstance> {
      const parent = await Deno.makeTempDir({ prefix: "sluice-ledger-" });
      const dir = `${parent}/ledger`;
      return {
        // Small segments so the tests cross segment boundaries.
        open: () => DirectoryBackend.open(dir, { segmentBytes: 2048 }),
        rawContains: (text) => filesContain(parent, text),
        async rawNames(): Promise<string[]> {
          return (await walkFiles(parent)).map((f) => `${parent}/${f}`);
        },
        container: `${dir}/`,
        uri: `file://${dir}`,
        cleanup: () => Deno.remove(parent, { recursive: true }),
      };
    },
  },
  {
    // Not the default: one open track, so every other track's use closes the last one's tail
    // and drops its parsed segments, and every call runs on a track reopened lazily. The
    // "directory" harness above is its twin at the default.
    name: "directory, one open track",
    async setup(): Promise<BackendInstance> {
      const parent = await Deno.makeTempDir({ prefix: "sluice-ledger-" });
      const dir = `${parent}/ledger`;
      return {
        open: () => DirectoryBackend.open(dir, { segmentBytes: 2048, openTracks: 1 }),
        rawContains: (text) => filesContain(parent, text),
        async rawNames(): Promise<string[]> {
          return (await walkFiles(parent)).map((f) => `${parent}/${f}`);
        },
        container: `${dir}/`,
        cleanup: () => Deno.remove(parent, { recursive: true }),
      };
    },
  },
  {
    name: "postgres",
    needs: { service: "PostgreSQL", missing: postgresMissing(pgUrl) },
    setup(): Promise<BackendInstance> {
      const url = pgUrl!;
      const table = freshTableName();
      const uri = new URL(url);
      uri.searchParams.set("table", table);
      return Promise.resolve({
        uri: uri.href,
        open: () => PostgresBackend.open(url, table, { maxConnections: 4 }),
        rawContains: (text) =>
          withSql(url, async (sql) => {
            const rows = await sql`select t::text as row from ${sql(table)} t`;
            return rows.some((r) => String(r.row).includes(text));
          }),
        rawNames: () => Promise.resolve([]),
        cleanup: () => dropTable(url, table),
      });
    },
  },
  {
    name: "s3",
    async setup(): Promise<BackendInstance> {
      const s3 = await startS3rver();
      const prefix = "ledgers/p1";
      return {
        open: () => S3Backend.open(s3.backendOptions(prefix)),
        // s3rver keeps object bytes in files: look at the disk, not just through the API.
        rawContains: (text) => filesContain(s3.dir, text),
        rawNames: () => objectKeys(s3),
        container: `${prefix}/`,
        uri: s3.ledgerUri(prefix),
        credentials: s3.credentials,
        cleanup: () => s3.stop(),
      };
    },
  },
];
