/*
 * Batches decided in TypeScript inside their transaction: those committed
 * through a commit gate, and those that set a track's seal or hold a
 * redaction (the seal lets redactions through). The transaction locks the
 * track's sequence row and reads its next sequence and seal; reads the
 * entries the gate has not seen (committed by any process before the lock,
 * so final); lets `admitBatch` number the batch, ask the gate about each
 * draft and apply the seal; then inserts what was admitted, moves the
 * sequence row on (next sequence, commit time, seal) and notifies the
 * table's channel, in one statement. The lock is held until commit, so a
 * gate's check and the append it admits are one step for every process.
 * Two round trips besides BEGIN and COMMIT, and a third when entries the
 * gate has not seen must be read first.
 */
import { admitBatch } from "../admission.ts";
import type { CommitGate, DraftOutcome } from "../backend.ts";
import type { EntryDraft, LedgerEntry } from "../entry.ts";
import { entryColumns, fromRow, type Row, type Sql, type TableRef, translate } from "./rows.ts";

interface HeadRow {
  next: string;
  wallclock: string;
  seal: string | null;
}

/** True when a batch must be decided here rather than by the plain statement of shared_writes.ts. */
export function mustDecide(drafts: readonly EntryDraft[], gate: CommitGate | undefined): boolean {
  return gate !== undefined || drafts.some((d) => d.seal !== undefined || d.redacts !== undefined);
}

/** Commits `drafts` as one batch of track `key`, decided in TypeScript (see the module comment). */
export async function commitDecided(
  ref: TableRef,
  key: string,
  drafts: readonly EntryDraft[],
  wallclock: bigint,
  gate: CommitGate | undefined,
): Promise<DraftOutcome[]> {
  if (drafts.some((d) => d.idempotencyKey !== undefined)) {
    throw new TypeError("A batch through a gate or setting a seal carries no Idempotency-Key");
  }
  const sql = ref.pool.sql;
  const t = sql(ref.table);
  try {
    return await sql.begin(async (tx) => {
      const [head] = await tx<HeadRow[]>`
        select coalesce(next_seq, (select coalesce(max(seq), -1) + 1 from ${t}
            where track = ${key} and seq >= 0))::text as next,
          wallclock::text as wallclock, seal
        from ${t} where track = ${key} and seq = -1 for update`;
      if (!head) throw new Error(`The ledger has no existence row for track "${key}"`);
      const first = Number(head.next);
      const stored = gate ? await unseen(tx as unknown as Sql, ref, key, gate.seen, first) : [];
      const floor = BigInt(head.wallclock);
      const time = wallclock > floor ? wallclock : floor;
      const decided = admitBatch(drafts, first, time, head.seal ?? undefined, gate?.open(stored));
      if (decided.entries.length > 0) {
        await insert(tx as unknown as Sql, ref, key, decided.entries, decided.seal);
      }
      return decided.outcomes;
    });
  } catch (error) {
    throw translate(error, "Cannot append to the ledger");
  }
}

/** Entries after `seen` and before `next`, oldest first, without payloads (a gate reads metadata). */
async function unseen(
  tx: Sql,
  ref: TableRef,
  key: string,
  seen: number,
  next: number,
): Promise<LedgerEntry[]> {
  if (next - 1 <= seen) return [];
  const rows = await tx<Row[]>`select ${entryColumns(tx, undefined, false)}
    from ${tx(ref.table)} where track = ${key} and seq > ${seen} and seq < ${next} order by seq`;
  return rows.map(fromRow);
}

/** Inserts numbered entries and moves the sequence row past them, with the seal after them. */
async function insert(
  tx: Sql,
  ref: TableRef,
  key: string,
  entries: readonly LedgerEntry[],
  seal: string | undefined,
): Promise<void> {
  const t = tx(ref.table);
  const rows = entries.map((e) => ({
    seq: e.seq,
    wallclock: e.wallclock.toString(),
    sender: e.sender ?? null,
    payload: e.payload ?? null,
    redacts: e.redacts ?? null,
    // Hex only on the way in (the rows travel as JSON); the column holds the bytes.
    bytes: e.bytes === undefined ? null : e.bytes.toHex(),
    meta: e.meta ?? null,
    seal: e.seal ?? null,
  }));
  const last = entries[entries.length - 1]!;
  await tx`
    with ins as (
      insert into ${t} (track, seq, epoch, wallclock, sender, payload, redacts, bytes, meta, seal)
      select ${key}, seq, ${last.epoch}, wallclock, sender, payload, redacts, decode(bytes, 'hex'),
        meta, seal
      from json_to_recordset(${tx.json(rows)}::json) as r(seq bigint, wallclock bigint,
        sender text, payload text, redacts text, bytes text, meta text, seal text)
    )
    update ${t} set next_seq = ${last.seq + 1}, wallclock = ${last.wallclock.toString()},
      seal = ${seal ?? null}
    where track = ${key} and seq = -1
    returning pg_notify(${ref.channel}, json_build_object('t', track, 'l', next_seq - 1)::text)
      is null as told`;
}
