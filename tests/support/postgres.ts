import postgres from "postgres";
import { startTcpProxy, type TcpProxy } from "./tcp_proxy.ts";

/** Where tests look for PostgreSQL unless `SLUICE_TEST_PG_URL` says otherwise. */
export const DEFAULT_TEST_PG_URL = "postgres://postgres@127.0.0.1:5432/test";

/**
 * The URL of a reachable PostgreSQL for tests, or undefined (after printing
 * why the PostgreSQL tests skip) when none answers.
 */
export async function findPostgres(): Promise<string | undefined> {
  const url = testPgUrl();
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
    return url;
  } catch (error) {
    console.warn(
      `SKIP PostgreSQL tests: no server at ${url} (${
        error instanceof Error ? error.message : String(error)
      }); set SLUICE_TEST_PG_URL to run them`,
    );
    return undefined;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Why the PostgreSQL tests skip: undefined when {@linkcode findPostgres} found `url`. */
export function postgresMissing(url: string | undefined): string | undefined {
  return url === undefined ? `no server answers at ${testPgUrl()}` : undefined;
}

function testPgUrl(): string {
  return Deno.env.get("SLUICE_TEST_PG_URL") ?? DEFAULT_TEST_PG_URL;
}

/** A table name no other test run uses. */
export function freshTableName(): string {
  return `ledger_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
}

/** Drops a test table (and its index) if it exists. */
export async function dropTable(url: string, table: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`drop table if exists ${sql(table)}`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Runs one query against a test database and closes the connection. */
export async function withSql<T>(url: string, f: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await f(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * A TCP proxy in front of the PostgreSQL at `url` (to cut, stall or restore its connections), and
 * `url` with its host pointing through the proxy.
 */
export function proxiedPostgres(url: string): { proxy: TcpProxy; url: URL } {
  const target = new URL(url);
  const proxy = startTcpProxy(target.hostname, Number(target.port || 5432));
  const proxied = new URL(url);
  proxied.host = `127.0.0.1:${proxy.port}`;
  return { proxy, url: proxied };
}
