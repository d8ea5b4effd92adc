/*
 * Writes that several funnel processes may make to one track at once.
 *
 * A track's existence row (seq = -1) holds its next sequence (`next_seq`)
 * and newest commit time (`wallclock`). A batch is one transaction that
 * first locks that row, then, in a second statement (whose snapshot is
 * taken after the lock, so it sees every batch committed before), skips
 * drafts whose sender and Idempotency-Key are stored already, numbers the
 * rest after `next_seq`, inserts them and tells the table's channel
 * `{"t":<track>,"l":<last seq>}`. The lock is held until commit, so batches
 * commit in sequence order and a batch that rolls back leaves no gap. Both
 * statements are sent at once (pipelined): one round trip more than an
 * unshared insert, plus BEGIN and COMMIT. The existence row's `seal` is the
 * track's seal: while it is set these plain batches store nothing and are
 * refused (a batch through a gate, or one that seals, is decided in
 * TypeScript instead: decided_writes.ts).
 */
import type { DraftOutcome, RedactResult } from "../backend.ts";
import type { EntryDraft, LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { CURRENT_EPOCH } from "../entry.ts";
import { formatGroupId } from "../../record/mod.ts";
import { entryColumns, fromRow, type Row, type Sql, type TableRef, translate } from "./rows.ts";

type KeyedRow = Row & { i: number };

interface HeadRow {
  first: string;
  wallclock: string;
}

/** Commits `drafts` as one batch of track `key` (see the module comment). */
export async function commitDrafts(
  ref: TableRef,
  key: string,
  drafts: readonly EntryDraft[],
  wallclock: bigint,
  attempt = 0,
): Promise<DraftOutcome[]> {
  if (drafts.length === 0) return [];
  // A key twice in one batch is stored once: later drafts take the first one's outcome.
  const firstOf = new Map<string, number>();
  const alias: number[] = [];
  const rows: DraftRow[] = [];
  drafts.forEach((d, i) => {
    if (d.idempotencyKey !== undefined) {
      const k = `${d.sender ?? ""}\u0000${d.idempotencyKey}`;
      const earlier = firstOf.get(k);
      if (earlier !== undefined) return void alias.push(earlier);
      firstOf.set(k, i);
    }
    alias.push(i);
    rows.push({
      i,
      sender: d.sender ?? null,
      payload: d.payload ?? null,
      redacts: d.redacts ?? null,
      idem: d.idempotencyKey ?? null,
      // Hex only on the way in (the rows travel as JSON); the column holds the bytes.
      bytes: d.bytes === undefined ? null : d.bytes.toHex(),
      meta: d.meta ?? null,
    });
  });
  const sql = ref.pool.sql;
  const t = sql(ref.table);
  const keyed = firstOf.size > 0;
  let results: unknown[];
  const main = (q: Sql) => numbered(q, ref, key, rows, wallclock);
  try {
    results = !keyed ? [undefined, [], await main(sql)] : await sql.begin((tx) => [
      tx`select 1 from ${t} where track = ${key} and seq = -1 for update`,
      // Drafts whose key is stored already, with their entry: read after the lock, so no
      // other process can store one of them before this transaction ends.
      tx<KeyedRow[]>`
          select distinct on (d.i) d.i, ${entryColumns(tx, "o")}
          from json_to_recordset(${tx.json(rows)}::json) as d(i int, sender text, idem text)
          join ${t} o on o.track = ${key} and o.seq >= 0 and o.idem = d.idem
            and o.sender is not distinct from d.sender
          where d.idem is not null
          order by d.i, o.seq`,
      main(tx as unknown as Sql),
    ]);
  } catch (error) {
    throw translate(error, "Cannot append to the ledger");
  }
  const stored = results[1] as KeyedRow[];
  const head = (results[2] as HeadRow[])[0];
  if (head) return outcomes(drafts, alias, stored, BigInt(head.first), BigInt(head.wallclock));
  // No sequence row was updated: the track is sealed (nothing was stored), or it has no row.
  const seal = await sealOf(ref, key);
  if (seal === undefined || (seal === null && attempt >= 3)) {
    throw new Error(`The ledger has no open sequence row for track "${key}"`);
  }
  // Unsealed since by another process: the batch goes again.
  if (seal === null) return commitDrafts(ref, key, drafts, wallclock, attempt + 1);
  return outcomes(drafts, alias, stored, 0n, 0n, seal);
}

/** One draft as the numbering statement takes it (the rows travel as one JSON parameter). */
type DraftRow = {
  i: number;
  sender: string | null;
  payload: string | null;
  redacts: string | null;
  idem: string | null;
  bytes: string | null;
  meta: string | null;
};

/**
 * The numbering statement; on its own (no key to look for) it is one
 * transaction whose UPDATE of the sequence row waits for, then sees, any
 * other process's batch. A sealed track's row is not updated: nothing is
 * stored and no row is returned.
 */
function numbered(
  q: Sql,
  ref: TableRef,
  key: string,
  rows: DraftRow[],
  wallclock: bigint,
): Promise<HeadRow[]> {
  const t = q(ref.table);
  return q<HeadRow[]>`
        with d as (
          select * from json_to_recordset(${q.json(rows)}::json)
            as d(i int, sender text, payload text, redacts text, idem text, bytes text, meta text)
        ),
        fresh as (
          select d.*, row_number() over (order by d.i) - 1 as n from d
          where d.idem is null or not exists (
            select 1 from ${t} o where o.track = ${key} and o.seq >= 0 and o.idem = d.idem
              and o.sender is not distinct from d.sender)
        ),
        head as (
          update ${t} set
            next_seq = coalesce(next_seq, (select coalesce(max(seq), -1) + 1 from ${t}
              where track = ${key} and seq >= 0)) + (select count(*) from fresh),
            wallclock = greatest(wallclock, ${wallclock.toString()})
          where track = ${key} and seq = -1 and seal is null
          returning next_seq - (select count(*) from fresh) as first, wallclock,
            pg_notify(${ref.channel}, json_build_object('t', track, 'l', next_seq - 1)::text)
              is null as told
        ),
        ins as (
          insert into ${t} (track, seq, epoch, wallclock, sender, payload, redacts, idem, bytes, meta)
          select ${key}, head.first + fresh.n, ${CURRENT_EPOCH}, head.wallclock,
            fresh.sender, fresh.payload, fresh.redacts, fresh.idem, decode(fresh.bytes, 'hex'),
            fresh.meta
          from fresh cross join head
        )
        select first::text as first, wallclock::text as wallclock from head`;
}

function outcomes(
  drafts: readonly EntryDraft[],
  alias: readonly number[],
  stored: readonly KeyedRow[],
  first: bigint,
  wallclock: bigint,
  seal?: string,
): DraftOutcome[] {
  const existing = new Map(stored.map((r) => [r.i, fromRow(r)]));
  const own = new Map<number, LedgerEntry>();
  let next = Number(first);
  drafts.forEach((d, i) => {
    if (seal !== undefined || alias[i] !== i || existing.has(i)) return;
    own.set(i, { ...d, epoch: CURRENT_EPOCH, seq: next++, wallclock });
  });
  return drafts.map((_, i) => {
    const at = alias[i]!;
    const mine = own.get(at);
    // A repeat within the batch was not stored itself: it replays the first.
    if (mine) return { entry: mine, existing: at !== i };
    const before = existing.get(at);
    // A key stored before the seal still answers with its record.
    if (before) return { entry: before, existing: true };
    return { refused: { seal: seal! } };
  });
}

/** The track's seal: null when open, undefined when the track has no sequence row. */
async function sealOf(ref: TableRef, key: string): Promise<string | null | undefined> {
  const sql = ref.pool.sql;
  try {
    const rows = await sql<{ seal: string | null }[]>`select seal from ${sql(ref.table)}
      where track = ${key} and seq = -1`;
    return rows[0]?.seal;
  } catch (error) {
    throw translate(error, "Cannot append to the ledger");
  }
}

/** Commits a redaction of `seq` and erases its payload in one transaction (see PostgresTrack). */
export async function redactOnce(
  ref: TableRef,
  key: string,
  seq: number,
  sender: string | undefined,
  wallclock: bigint,
): Promise<RedactResult> {
  const sql = ref.pool.sql;
  const t = sql(ref.table);
  try {
    return await sql.begin(async (tx) => {
      await tx`select 1 from ${t} where track = ${key} and seq = -1 for update`;
      const [target] = await tx<Row[]>`select ${entryColumns(tx)} from ${t}
        where track = ${key} and seq = ${seq} and seq >= 0`;
      if (!target) throw new LedgerError("not_found", `No group ${seq} in this track`);
      if (target.redacts !== null) {
        throw new LedgerError("invalid_request", "The group is a redaction; it cannot be redacted");
      }
      if (target.redacted) return { already: true } as const;
      const redacts = formatGroupId({ epoch: target.epoch, seq });
      const [head] = await tx<HeadRow[]>`
        update ${t} set
          next_seq = coalesce(next_seq, (select coalesce(max(seq), -1) + 1 from ${t}
            where track = ${key} and seq >= 0)) + 1,
          wallclock = greatest(wallclock, ${wallclock.toString()})
        where track = ${key} and seq = -1
        returning (next_seq - 1)::text as first, wallclock::text as wallclock,
          pg_notify(${ref.channel}, json_build_object('t', track, 'l', next_seq - 1)::text)
            is null as told`;
      if (!head) throw new Error(`The ledger has no existence row for track "${key}"`);
      const redaction: LedgerEntry = {
        ...(sender === undefined ? {} : { sender }),
        redacts,
        epoch: CURRENT_EPOCH,
        seq: Number(head.first),
        wallclock: BigInt(head.wallclock),
      };
      await tx`insert into ${t} (track, seq, epoch, wallclock, sender, redacts)
        values (${key}, ${redaction.seq}, ${CURRENT_EPOCH}, ${head.wallclock},
          ${sender ?? null}, ${redacts})`;
      await tx`update ${t} set payload = null, bytes = null, redacted = true
        where track = ${key} and seq = ${seq}`;
      return { redaction };
    });
  } catch (error) {
    throw translate(error, "Cannot redact in the ledger");
  }
}
