import postgres from "postgres";
import type { LedgerBackend, LedgerEvents, TrackBackend } from "../backend.ts";
import { pathFromKey } from "../storage_name.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";
import { guardDriver } from "./driver_guard.ts";
import { ListenHeartbeat } from "./heartbeat.ts";
import { systemTimers, type Timers, withDeadline } from "../../timers/mod.ts";
import { PostgresTrack } from "./postgres_track.ts";
import { type Pool, type Sql, type TableRef, translate } from "./rows.ts";

/*
 * One table holds every track: a row per entry keyed (track, seq), plus a row
 * with seq = -1 per track that makes PUT-created empty tracks exist and list,
 * and holds the track's next sequence, newest commit time and seal, so several
 * processes can share the table (see shared_writes.ts and decided_writes.ts).
 * A batch is one INSERT statement (one transaction) whose rows travel as a
 * single JSON parameter, so the statement text never changes and stays
 * prepared. Every value is a parameter; the table name is a validated
 * identifier and is still quoted as one. Redaction sets the payload to NULL
 * in place; PostgreSQL frees the old row version at the next (auto)vacuum.
 */

/** Options of {@link PostgresBackend.open}. */
export interface PostgresOptions {
  /** Largest number of pooled connections (default 8). */
  readonly maxConnections?: number;
  /** Seconds to wait for a connection before answering unavailable (default 5). */
  readonly connectTimeout?: number;
  /** Timers of the LISTEN: its deadline, its retries and its heartbeat (default the system's). */
  readonly timers?: Timers;
}

/** Stores every track in one PostgreSQL table. */
export class PostgresBackend implements LedgerBackend {
  /** Backend name. */
  readonly name = "postgres";
  readonly #pool: Pool;
  readonly #connect: () => Sql;
  readonly #table: string;
  readonly #ref: TableRef;
  readonly #open = new Map<string, PostgresTrack>();
  #listener: Sql | undefined;
  readonly #timers: Timers;
  // A driver fault on a closed connection replaces the pool instead of ending the process.
  readonly #unguard: () => void;

  private constructor(connect: () => Sql, table: string, port: number, timers: Timers) {
    this.#connect = connect;
    this.#timers = timers;
    this.#pool = { sql: connect() };
    this.#table = table;
    this.#ref = { pool: this.#pool, table, channel: table };
    this.#unguard = guardDriver(() => this.abandon(), port);
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
    const backend = new PostgresBackend(
      connect,
      table,
      serverPort(url),
      options.timers ?? systemTimers,
    );
    try {
      await backend.#ensureSchema();
    } catch (error) {
      // Closing the pool is best effort; the schema error is what the caller sees.
      await backend.#pool.sql.end({ timeout: 1 }).catch(() => {});
      backend.#unguard();
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
          seal text,
          primary key (track, seq)
        )`;
      await sql`create index if not exists ${sql(`${this.#table.slice(0, 50)}_tracks`)}
        on ${t} (track) where seq = -1`;
    } catch (error) {
      // Two processes creating the same table race on the catalog; the loser finds it made.
      if (!raced(error)) throw error;
    }
    await this.#upgradeSchema();
  }

  /*
   * Tables made by earlier versions lack the existence row's next sequence,
   * the seal column or the index that finds a stored Idempotency-Key. Each is
   * added once; the catalog is read first so that a funnel starting
   * beside running ones does not lock the table when nothing is missing.
   */
  async #upgradeSchema(): Promise<void> {
    const sql = this.#pool.sql;
    const t = sql(this.#table);
    const index = `${this.#table.slice(0, 50)}_idem`;
    const [state] = await sql<
      { column: boolean; index: boolean; bytes: boolean; seal: boolean }[]
    >`
      select exists (select 1 from information_schema.columns
          where table_schema = current_schema() and table_name = ${this.#table}
            and column_name = 'next_seq') as column,
        to_regclass(${index}) is not null as index,
        exists (select 1 from information_schema.columns
          where table_schema = current_schema() and table_name = ${this.#table}
            and column_name = 'meta') as bytes,
        exists (select 1 from information_schema.columns
          where table_schema = current_schema() and table_name = ${this.#table}
            and column_name = 'seal') as seal`;
    try {
      // Byte payloads and protocol metadata: two nullable columns, so old rows read as before.
      if (!state?.bytes) {
        await sql`alter table ${t} add column if not exists bytes bytea,
          add column if not exists meta text`;
      }
      // Seals: NULL on every old row, so every old track is open.
      if (!state?.seal) await sql`alter table ${t} add column if not exists seal text`;
      if (!state?.column) {
        await sql`alter table ${t} add column if not exists next_seq bigint`;
        // Tracks written before: number after their newest record, never below its time.
        await sql`update ${t} e set
            next_seq = coalesce((select max(r.seq) + 1 from ${t} r
              where r.track = e.track and r.seq >= 0), 0),
            wallclock = coalesce((select max(r.wallclock) from ${t} r
              where r.track = e.track and r.seq >= 0), 0)
          where e.seq = -1 and e.next_seq is null`;
      }
      if (!state?.index) {
        await sql`create index if not exists ${sql(index)} on ${t} (track, idem)
          where idem is not null`;
      }
    } catch (error) {
      if (!raced(error)) throw error;
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
        // Other processes hear of a new track, so they publish it too.
        await sql`with made as (
            insert into ${t} (track, seq, next_seq) values (${key}, -1, 0)
            on conflict do nothing returning track)
          select pg_notify(${this.#table}, json_build_object('t', track, 'c', true)::text)
            is null as told from made`;
      } else {
        const rows = await sql`select 1 from ${t} where track = ${key} and seq = -1`;
        if (rows.length === 0) return undefined;
      }
    } catch (error) {
      throw translate(error, "Cannot open the ledger track");
    }
    const track = this.#open.get(key) ?? new PostgresTrack(this.#ref, key);
    this.#open.set(key, track);
    return track;
  }

  /**
   * LISTENs on the table's channel on a connection of its own (never
   * abandoned with the pool; the driver re-listens after it drops, and then
   * `events.resync` is called, since notices sent meanwhile are lost). A
   * server that does not answer the LISTEN within the connect timeout is
   * tried again every {@link RELISTEN_MS} in the background, so startup
   * never waits on it; the first success after a failure resyncs too. A
   * {@link ListenHeartbeat} proves the connection alive: one that died
   * without closing (nothing would ever tell the driver) is replaced, and
   * that resyncs as well.
   */
  async follow(events: LedgerEvents): Promise<() => Promise<void>> {
    let stopped = false;
    let unlisten: (() => Promise<void>) | undefined;
    let timer: unknown;
    let heard = false;
    const heartbeat = new ListenHeartbeat({
      timers: this.#timers,
      send: (payload) => (this.#listener ?? this.#pool.sql).notify(this.#table, payload),
      missed: () => {
        // Silently dead: drop it (the driver would wait forever) and listen anew.
        const dead = this.#listener;
        this.#listener = undefined;
        unlisten = undefined;
        dead?.end({ timeout: 0 }).catch(() => {});
        heard = true;
        if (!stopped) void attempt();
      },
    });
    const onNotice = (payload: string) => {
      if (heartbeat.heard(payload)) return;
      const notice = parseNotice(payload);
      if (!notice) return;
      if (notice.last === undefined) events.created(notice.path);
      else events.committed(notice.path, notice.last);
    };
    const attempt = async (): Promise<void> => {
      const listener = this.#listener ??= this.#connect();
      try {
        const listening = listener.listen(this.#table, onNotice, () => {
          if (heard) events.resync();
          heard = true;
        });
        const result = await deadline(listening, LISTEN_DEADLINE_MS, this.#timers);
        unlisten = result.unlisten;
        if (stopped) await unlisten();
        else heartbeat.start();
      } catch {
        // Not listening: drop the connection (it may hang) and try again later.
        if (this.#listener === listener) this.#listener = undefined;
        listener.end({ timeout: 0 }).catch(() => {});
        heard = true; // whatever was missed meanwhile is read at the next success
        if (!stopped) timer = this.#timers.setTimeout(() => void attempt(), RELISTEN_MS);
      }
    };
    await attempt();
    // Not awaited: on a connection the server stopped answering, UNLISTEN would hang;
    // close() ends the listening connection anyway.
    return () => {
      stopped = true;
      heartbeat.stop();
      if (timer !== undefined) this.#timers.clearTimeout(timer);
      unlisten?.().catch(() => {});
      return Promise.resolve();
    };
  }

  /**
   * Runs `task` under a session advisory lock named by the table and `name`,
   * held on a reserved connection: one process at a time across every funnel
   * sharing the table, and freed by the server when the process dies.
   */
  async exclusive<T>(name: string, task: () => Promise<T>): Promise<T | undefined> {
    const key = `${this.#table}:${name}`;
    let reserved;
    try {
      reserved = await this.#pool.sql.reserve();
    } catch (error) {
      throw translate(error, "Cannot take the ledger lock");
    }
    try {
      let locked;
      try {
        const [row] = await reserved<{ locked: boolean }[]>`
          select pg_try_advisory_lock(hashtextextended(${key}, 0)) as locked`;
        locked = row?.locked === true;
      } catch (error) {
        throw translate(error, "Cannot take the ledger lock");
      }
      if (!locked) return undefined;
      try {
        return await task();
      } finally {
        await reserved`select pg_advisory_unlock(hashtextextended(${key}, 0))`.catch(() => {});
      }
    } finally {
      reserved.release();
    }
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    // In-flight work has finished by now; a connection stuck reconnecting must not hold shutdown.
    await this.#listener?.end({ timeout: 1 });
    await this.#pool.sql.end({ timeout: 1 });
    this.#unguard();
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

/** Longest wait for the LISTEN to be answered, ms. */
const LISTEN_DEADLINE_MS = 5000;
/** Wait before trying to LISTEN again after a failure, ms. */
export const RELISTEN_MS = 2000;

function deadline<T>(promise: Promise<T>, ms: number, timers: Timers): Promise<T> {
  return withDeadline(promise, ms, () => new Error("no answer"), undefined, timers);
}

// The server's port as the driver reports it in its errors (5432 unless the URL names one).
function serverPort(url: string): number {
  try {
    return Number(new URL(url).port || 5432);
  } catch {
    return 5432;
  }
}

// Two processes creating the same table or index race on the catalog; the loser finds it made.
function raced(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "23505" || code === "42P07";
}

/** A notice on the table's channel: `{"t":<track>,"l":<last seq>}` or `{"t":<track>,"c":true}`. */
function parseNotice(payload: string): { path: TrackPath; last?: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  const v = value as { t?: unknown; l?: unknown };
  if (typeof v?.t !== "string") return undefined;
  const path = pathFromKey(v.t);
  if (!path) return undefined;
  if (typeof v.l === "number" && Number.isSafeInteger(v.l)) return { path, last: v.l };
  return { path };
}
