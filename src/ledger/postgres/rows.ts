import type postgres from "postgres";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";

/** A connection pool of the driver. */
export type Sql = postgres.Sql<Record<string, never>>;

/** The current connection pool, shared by the backend and its tracks; replaced by `abandon`. */
export interface Pool {
  sql: Sql;
}

/** Where a backend's tracks live: the pool, the table, and the channel its commits are told on. */
export interface TableRef {
  readonly pool: Pool;
  /** The table name, a plain identifier. */
  readonly table: string;
  /** The LISTEN/NOTIFY channel: the table's name. */
  readonly channel: string;
}

/** One entry row as selected by {@link entryColumns}. */
export interface Row {
  seq: string;
  epoch: number;
  wallclock: string;
  sender: string | null;
  payload: string | null;
  redacts: string | null;
  redacted: boolean;
  idem: string | null;
  bytes: Uint8Array | null;
  meta: string | null;
  seal: string | null;
}

/**
 * The selected columns of an entry row (`wallclock` as text: it exceeds 2^53);
 * without `payloads`, the payload columns read as NULL.
 */
export function entryColumns(
  sql: Pick<Sql, "unsafe">,
  alias?: string,
  payloads = true,
): postgres.Fragment {
  const p = alias ? `${alias}.` : "";
  const data = payloads ? `${p}payload, ${p}bytes` : "null as payload, null as bytes";
  return sql.unsafe(
    `${p}seq, ${p}epoch, ${p}wallclock::text as wallclock, ${p}sender, ${data}, ` +
      `${p}redacts, ${p}redacted, ${p}idem, ${p}meta, ${p}seal`,
  );
}

/** The entry a row holds. */
export function fromRow(row: Row): LedgerEntry {
  const entry: { -readonly [K in keyof LedgerEntry]: LedgerEntry[K] } = {
    epoch: row.epoch,
    seq: Number(row.seq),
    wallclock: BigInt(row.wallclock),
  };
  if (row.sender !== null) entry.sender = row.sender;
  if (row.payload !== null) entry.payload = row.payload;
  if (row.redacts !== null) entry.redacts = row.redacts;
  if (row.redacted) entry.redacted = true;
  if (row.idem !== null) entry.idempotencyKey = row.idem;
  // The driver gives a Buffer; entries hold plain Uint8Arrays.
  if (row.bytes !== null) entry.bytes = Uint8Array.from(row.bytes);
  if (row.meta !== null) entry.meta = row.meta;
  if (row.seal !== null) entry.seal = row.seal;
  return entry;
}

// SQLSTATE classes that mean the server is away or refusing work for now.
const UNAVAILABLE_STATES = /^(08|53|57P0|58)/;

/** Translates a driver error: connection trouble becomes `LedgerError("unavailable")`. */
export function translate(error: unknown, message: string): Error {
  if (error instanceof LedgerError || error instanceof TypeError) return error;
  const e = error as { name?: unknown; code?: unknown; severity?: unknown };
  const isServerError = e?.name === "PostgresError" || typeof e?.severity === "string";
  if (!isServerError || (typeof e.code === "string" && UNAVAILABLE_STATES.test(e.code))) {
    return new LedgerError("unavailable", `${message}: the database is unreachable`, {
      cause: error,
    });
  }
  return new Error(`${message}: the database refused the statement`, { cause: error });
}
