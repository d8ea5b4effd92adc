import { sealAfter } from "../admission.ts";
import type { CommitGate, DraftOutcome, RedactResult, TrackBackend } from "../backend.ts";
import type { EntryDraft, LedgerEntry } from "../entry.ts";
import { commitDecided, mustDecide } from "./decided_writes.ts";
import { entryColumns, fromRow, type Row, type TableRef, translate } from "./rows.ts";
import { commitDrafts, redactOnce } from "./shared_writes.ts";

/**
 * One track's rows. Several processes may write it at once: `commit` and
 * `redactOnce` number entries under the track's existence row, locked for
 * the transaction, so PostgreSQL decides one order across processes.
 * `append` (entries numbered by the caller) stays for single-writer use.
 */
export class PostgresTrack implements TrackBackend {
  readonly #ref: TableRef;
  readonly #key: string;

  /** The rows of track `key` in `ref`'s table. */
  constructor(ref: TableRef, key: string) {
    this.#ref = ref;
    this.#key = key;
  }

  commit(
    drafts: readonly EntryDraft[],
    wallclock: bigint,
    gate?: CommitGate,
  ): Promise<DraftOutcome[]> {
    return mustDecide(drafts, gate)
      ? commitDecided(this.#ref, this.#key, drafts, wallclock, gate)
      : commitDrafts(this.#ref, this.#key, drafts, wallclock);
  }

  redactOnce(seq: number, sender: string | undefined, wallclock: bigint): Promise<RedactResult> {
    return redactOnce(this.#ref, this.#key, seq, sender, wallclock);
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
      seal: e.seal ?? null,
    }));
    const last = entries[entries.length - 1]!;
    // The seal after the batch: its newest entry that is not a redaction says (none: as it was).
    const records = entries.some((e) => e.redacts === undefined);
    const seal = records ? sealAfter(undefined, entries) ?? null : null;
    const sql = this.#ref.pool.sql;
    const t = sql(this.#ref.table);
    try {
      // One statement is one transaction: the whole batch commits or none of it. The
      // track's next sequence moves past it, so `commit` numbers after these entries.
      await sql`
        with ins as (
          insert into ${t} (track, seq, epoch, wallclock, sender, payload, redacts, redacted, idem,
            bytes, meta, seal)
          select track, seq, epoch, wallclock, sender, payload, redacts, redacted, idem,
            decode(bytes, 'hex'), meta, seal
          from json_to_recordset(${sql.json(rows)}::json) as r(track text, seq bigint,
            epoch integer, wallclock bigint, sender text, payload text, redacts text,
            redacted boolean, idem text, bytes text, meta text, seal text)
        )
        update ${t} set next_seq = greatest(coalesce(next_seq, 0), ${last.seq + 1}),
          wallclock = greatest(wallclock, ${last.wallclock.toString()}),
          seal = case when ${records} then ${seal} else seal end
        where track = ${this.#key} and seq = -1`;
    } catch (error) {
      throw translate(error, "Cannot append to the ledger");
    }
  }

  async latest(): Promise<LedgerEntry | undefined> {
    return (await this.readBefore(undefined, 1))[0];
  }

  async readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const sql = this.#ref.pool.sql;
    const end = before ?? Number.MAX_SAFE_INTEGER;
    try {
      const rows = await sql<Row[]>`
        select ${entryColumns(sql)} from ${sql(this.#ref.table)}
        where track = ${this.#key} and seq >= 0 and seq < ${end}
        order by seq desc limit ${limit}`;
      return rows.map(fromRow);
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const sql = this.#ref.pool.sql;
    const start = after === undefined ? -1 : after;
    try {
      const rows = await sql<Row[]>`
        select ${entryColumns(sql)} from ${sql(this.#ref.table)}
        where track = ${this.#key} and seq >= 0 and seq > ${start}
        order by seq asc limit ${limit}`;
      return rows.map(fromRow);
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async get(seq: number): Promise<LedgerEntry | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    const sql = this.#ref.pool.sql;
    try {
      const rows = await sql<Row[]>`
        select ${entryColumns(sql)} from ${sql(this.#ref.table)}
        where track = ${this.#key} and seq = ${seq}`;
      return rows[0] ? fromRow(rows[0]) : undefined;
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async first(): Promise<number> {
    const sql = this.#ref.pool.sql;
    try {
      const [row] = await sql<{ first: string | null }[]>`
        select min(seq)::text as first from ${sql(this.#ref.table)}
        where track = ${this.#key} and seq >= 0`;
      return row?.first ? Number(row.first) : 0;
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  /**
   * Deletes the oldest rows below `before`, {@link TRIM_ROWS} per statement
   * (each its own transaction, so a pass killed halfway leaves the track
   * from some row on and holds no long lock), never the newest.
   */
  async trim(before: number): Promise<number> {
    const sql = this.#ref.pool.sql;
    const t = sql(this.#ref.table);
    try {
      while (true) {
        const gone = await sql`
          delete from ${t} where track = ${this.#key} and seq in (
            select seq from ${t} where track = ${this.#key} and seq >= 0 and seq < ${before}
              and seq < (select max(seq) from ${t} where track = ${this.#key})
            order by seq limit ${TRIM_ROWS})`;
        if (gone.count < TRIM_ROWS) break;
      }
    } catch (error) {
      throw translate(error, "Cannot remove old records from the ledger");
    }
    return await this.first();
  }

  /**
   * Compaction: deletes the rows of `seqs`, {@link TRIM_ROWS} per statement
   * (each its own transaction: a pass killed halfway leaves each row stored
   * or removed), never the oldest or the newest row of the track.
   */
  async remove(seqs: readonly number[]): Promise<number> {
    const sql = this.#ref.pool.sql;
    const t = sql(this.#ref.table);
    let removed = 0;
    try {
      // The ends are read once and left out here: in the statement they would make its
      // generic plan scan the whole track between them for every batch.
      const [ends] = await sql<{ first: string | null; last: string | null }[]>`
        select min(seq)::text as first, max(seq)::text as last from ${t}
        where track = ${this.#key} and seq >= 0`;
      const first = Number(ends?.first ?? -1);
      const last = Number(ends?.last ?? -1);
      const goes = seqs.filter((seq) => seq > first && seq < last);
      for (let i = 0; i < goes.length; i += TRIM_ROWS) {
        const batch = goes.slice(i, i + TRIM_ROWS);
        const gone = await sql`
          delete from ${t} where track = ${this.#key} and seq = any(${batch}::bigint[])`;
        removed += gone.count;
      }
    } catch (error) {
      throw translate(error, "Cannot remove superseded records from the ledger");
    }
    return removed;
  }

  async erasePayload(seq: number): Promise<void> {
    const sql = this.#ref.pool.sql;
    try {
      await sql`update ${sql(this.#ref.table)} set payload = null, bytes = null, redacted = true
        where track = ${this.#key} and seq = ${seq} and seq >= 0 and redacts is null`;
    } catch (error) {
      throw translate(error, "Cannot redact in the ledger");
    }
  }
}

/** Rows one retention statement deletes at most. */
export const TRIM_ROWS = 1000;
