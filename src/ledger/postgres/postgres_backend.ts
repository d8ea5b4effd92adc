import postgres from "postgres";
import type { LedgerBackend, TrackBackend } from "../backend.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { pathFromKey } from "../storage_name.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";

/*
 * One table holds every track: a row per entry keyed (track, seq), plus a row
 * with seq = -1 per track that makes PUT-created empty tracks exist and list.
 * A batch is one INSERT statement (one transaction) whose rows travel as a
 * single JSON parameter, so the statement text never changes and stays
 * prepared. Every value is a parameter; the table name is a validated
 * identifier and is still quoted as one. Redaction sets the payload to NULL
 * in place; PostgreSQL frees the old row version at the next (auto)vacuum.
 */

type Sql = postgres.Sql<Record<string, never>>;

/** The current connection pool, shared by the backend and its tracks; replaced by `abandon`. */
interface Pool {
  sql: Sql;
}

interface Row {
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
}

/** Options of {@link PostgresBackend.open}. */
export interface PostgresOptions {
  /** Largest number of pooled connections (default 8). */
  readonly maxConnections?: number;
  /** Seconds to wait for a connection before answering unavailable (default 5). */
  readonly connectTimeout?: number;
}

/** Stores every track in one PostgreSQL table. */
export class PostgresBackend implements LedgerBackend {
  /** Backend name. */
  readonly name = "postgres";
  readonly #pool: Pool;
  readonly #connect: () => Sql;
  readonly #table: string;
  readonly #open = new Map<string, PostgresTrack>();

  private constructor(connect: () => Sql, table: string) {
    this.#connect = connect;
    this.#pool = { sql: connect() };
    this.#table = table;
  }

  /**
   * Connects and creates the table if it is missing. Throws
   * `LedgerError("unavailable")` when the server cannot be reached.
   */
  static async open(
    url: string,
    table: string,
    options: PostgresOptions = {},
  ): Promise<PostgresBackend> {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table)) {
      throw new TypeError(`table "${table}" is not a plain SQL identifier`);
    }
    const connect = (): Sql =>
      postgres(url, {
        max: options.maxConnections ?? 8,
        connect_timeout: options.connectTimeout ?? 5,
        onnotice: () => {},
        // Reconnect quickly once the server is back (the driver's default waits up to 20 s),
        // and answer requests made during an outage within about a second.
        backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
        // Errors are translated below; the driver must not print connection failures itself.
        debug: false,
      });
    const backend = new PostgresBackend(connect, table);
    try {
      await backend.#ensureSchema();
    } catch (error) {
      // Closing the pool is best effort; the schema error is what the caller sees.
      await backend.#pool.sql.end({ timeout: 1 }).catch(() => {});
      throw translate(error, "Cannot prepare the ledger table");
    }
    return backend;
  }

  async #ensureSchema(): Promise<void> {
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    try {
      await sql`
        create table if not exists ${t} (
          track text not null,
          seq bigint not null,
          epoch integer not null default 1,
          wallclock bigint not null default 0,
          sender text,
          payload text,
          redacts text,
          redacted boolean not null default false,
          idem text,
          bytes bytea,
          meta text,
          primary key (track, seq)
        )`;
      // Byte payloads and protocol metadata: two nullable columns, so old rows read as before.
      await sql`alter table ${t} add column if not exists bytes bytea,
        add column if not exists meta text`;
      await sql`create index if not exists ${sql(`${this.#table.slice(0, 50)}_tracks`)}
        on ${t} (track) where seq = -1`;
    } catch (error) {
      // Two processes creating the same table race on the catalog; the loser finds it made.
      const code = (error as { code?: unknown }).code;
      if (code !== "23505" && code !== "42P07") throw error;
    }
  }

  /** Lists tracks from their existence rows (an index-only pass). */
  async listTracks(): Promise<TrackPath[]> {
    const sql = this.#pool.sql;
    try {
      const rows = await sql<{ track: string }[]>`
        select track from ${sql(this.#table)} where seq = -1 order by track`;
      return rows.map((r) => pathFromKey(r.track)).filter((p): p is TrackPath => p !== undefined);
    } catch (error) {
      throw translate(error, "Cannot list ledger tracks");
    }
  }

  /** Opens a track; with `create` inserts its existence row. */
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const key = trackKey(path);
    const cached = this.#open.get(key);
    if (cached) return cached;
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    try {
      if (create) {
        await sql`insert into ${t} (track, seq) values (${key}, -1) on conflict do nothing`;
      } else {
        const rows = await sql`select 1 from ${t} where track = ${key} and seq = -1`;
        if (rows.length === 0) return undefined;
      }
    } catch (error) {
      throw translate(error, "Cannot open the ledger track");
    }
    const track = this.#open.get(key) ?? new PostgresTrack(this.#pool, this.#table, key);
    this.#open.set(key, track);
    return track;
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    // In-flight work has finished by now; a connection stuck reconnecting must not hold shutdown.
    await this.#pool.sql.end({ timeout: 1 });
  }

  /**
   * A call timed out: its connection may be stuck on a server that stopped
   * answering, and the driver has no per-query timeout to free it. Starts a
   * fresh pool for later calls and destroys the old one's connections (their
   * pending queries fail, which the ledger already counts as unavailable).
   */
  abandon(): void {
    const old = this.#pool.sql;
    this.#pool.sql = this.#connect();
    old.end({ timeout: 0 }).catch(() => {});
  }
}

class PostgresTrack implements TrackBackend {
  readonly #pool: Pool;
  readonly #table: string;
  readonly #key: string;

  constructor(pool: Pool, table: string, key: string) {
    this.#pool = pool;
    this.#table = table;
    this.#key = key;
  }

  async append(entries: readonly LedgerEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map((e) => ({
      track: this.#key,
      seq: e.seq,
      epoch: e.epoch,
      wallclock: e.wallclock.toString(),
      sender: e.sender ?? null,
      payload: e.payload ?? null,
      redacts: e.redacts ?? null,
      redacted: e.redacted ?? false,
      idem: e.idempotencyKey ?? null,
      // Hex only on the way in (the rows travel as JSON); the column holds the bytes.
      bytes: e.bytes === undefined ? null : e.bytes.toHex(),
      meta: e.meta ?? null,
    }));
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    try {
      // One statement is one transaction: the whole batch commits or none of it.
      await sql`
        insert into ${t} (track, seq, epoch, wallclock, sender, payload, redacts, redacted, idem,
          bytes, meta)
        select track, seq, epoch, wallclock, sender, payload, redacts, redacted, idem,
          decode(bytes, 'hex'), meta
        from json_to_recordset(${sql.json(rows)}::json) as r(track text, seq bigint,
          epoch integer, wallclock bigint, sender text, payload text, redacts text,
          redacted boolean, idem text, bytes text, meta text)`;
    } catch (error) {
      throw translate(error, "Cannot append to the ledger");
    }
  }

  async latest(): Promise<LedgerEntry | undefined> {
    return (await this.readBefore(undefined, 1))[0];
  }

  async readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    const end = before ?? Number.MAX_SAFE_INTEGER;
    try {
      const rows = await sql<Row[]>`
        select seq, epoch, wallclock::text as wallclock, sender, payload, redacts, redacted, idem,
          bytes, meta
        from ${t} where track = ${this.#key} and seq >= 0 and seq < ${end}
        order by seq desc limit ${limit}`;
      return rows.map(fromRow);
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    const start = after === undefined ? -1 : after;
    try {
      const rows = await sql<Row[]>`
        select seq, epoch, wallclock::text as wallclock, sender, payload, redacts, redacted, idem,
          bytes, meta
        from ${t} where track = ${this.#key} and seq >= 0 and seq > ${start}
        order by seq asc limit ${limit}`;
      return rows.map(fromRow);
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async get(seq: number): Promise<LedgerEntry | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    const sql = this.#pool.sql;
    try {
      const rows = await sql<Row[]>`
        select seq, epoch, wallclock::text as wallclock, sender, payload, redacts, redacted, idem,
          bytes, meta
        from ${sql(this.#table)} where track = ${this.#key} and seq = ${seq}`;
      return rows[0] ? fromRow(rows[0]) : undefined;
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async erasePayload(seq: number): Promise<void> {
    const sql = this.#pool.sql;
    try {
      await sql`update ${sql(this.#table)} set payload = null, bytes = null, redacted = true
        where track = ${this.#key} and seq = ${seq} and seq >= 0 and redacts is null`;
    } catch (error) {
      throw translate(error, "Cannot redact in the ledger");
    }
  }
}

function fromRow(row: Row): LedgerEntry {
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
  return entry;
}

// SQLSTATE classes that mean the server is away or refusing work for now.
const UNAVAILABLE_STATES = /^(08|53|57P0|58)/;

/** Translates a driver error: connection trouble becomes `LedgerError("unavailable")`. */
function translate(error: unknown, message: string): Error {
  if (error instanceof LedgerError) return error;
  const e = error as { name?: unknown; code?: unknown; severity?: unknown };
  const isServerError = e?.name === "PostgresError" || typeof e?.severity === "string";
  if (!isServerError || (typeof e.code === "string" && UNAVAILABLE_STATES.test(e.code))) {
    return new LedgerError("unavailable", `${message}: the database is unreachable`, {
      cause: error,
    });
  }
  return new Error(`${message}: the database refused the statement`, { cause: error });
}
