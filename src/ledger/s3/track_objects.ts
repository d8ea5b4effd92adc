import { DeleteObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { TrackBackend } from "../backend.ts";
import { withoutPayload } from "../codec.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { getObject, mapLimited, status, translate } from "./map_limited.ts";
import { Serial } from "../serial.ts";
import {
  acknowledgedTorn,
  batchKeyPart,
  type BatchRef,
  listBatches,
  putBatch,
  readBatch,
  rewriteBatch,
  type StoredBatch,
  TornBatch,
} from "./batch_object.ts";

// One track of the S3 backend: its batch objects (key layout in s3_backend.ts).

/** The batch objects of one track under its key prefix. */
export class S3Track implements TrackBackend {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #erasing = new Serial();
  readonly #signal: () => AbortSignal;
  /** The first seq still served, from the floor object; read once, then kept (one writer). */
  #floor: number | undefined;
  /**
   * The first seq of the newest batch whose PUT the store answered here. A torn batch up to it
   * was acknowledged: never taken for an upload cut short or in progress (those of another
   * process are not known here).
   */
  #acknowledged = -1;

  /**
   * A track whose batch objects live under `prefix` in `bucket`; every request
   * carries `signal()`, which aborts when the backend abandons its calls.
   */
  constructor(client: S3Client, bucket: string, prefix: string, signal: () => AbortSignal) {
    this.#client = client;
    this.#bucket = bucket;
    this.#prefix = prefix;
    this.#signal = signal;
  }

  async append(entries: readonly LedgerEntry[]): Promise<void> {
    const first = entries[0];
    const last = entries[entries.length - 1];
    if (!first || !last) return;
    try {
      const key = this.#prefix + batchKeyPart(first.seq);
      await putBatch(this.#client, this.#bucket, key, entries, {
        create: true,
        signal: this.#signal(),
      });
      if (first.seq > this.#acknowledged) this.#acknowledged = first.seq;
    } catch (error) {
      if (status(error) === 412) {
        // Another write holds this seq: a late one of ours, answered 503 when its deadline
        // passed, or a second writer. Nothing of this batch is stored; the ledger re-reads
        // the tail before its next batch.
        throw new LedgerError(
          "unavailable",
          `Cannot append to the ledger: sequence ${first.seq} is already taken by another write`,
          { cause: error },
        );
      }
      throw translate(error, "Cannot append to the ledger");
    }
  }

  // A batch in place (a redaction, a compaction), crash-safe on any store.
  #rewrite(
    key: string,
    entries: readonly LedgerEntry[],
    span?: StoredBatch["span"],
  ): Promise<void> {
    const signal = this.#signal();
    return rewriteBatch(this.#client, this.#bucket, key, entries, {
      signal,
      ...(span ? { span } : {}),
    });
  }

  async latest(): Promise<LedgerEntry | undefined> {
    try {
      // Each pass removes one torn leftover (only the newest object can be one) or skips one
      // that vanished.
      for (let attempt = 0; attempt < 4; attempt++) {
        let newest: BatchRef | undefined;
        for await (const ref of this.#batches(undefined, 1)) {
          newest = ref;
          break;
        }
        if (!newest) return undefined;
        try {
          const entries = (await this.#readBatch(newest))?.entries ?? [];
          const last = entries[entries.length - 1];
          if (last) return last;
          // Listed, then gone before its GET (another reader deleted it as torn): the track is
          // not empty for that, so list again rather than answer "no entries".
          continue;
        } catch (error) {
          if (!(error instanceof TornBatch)) throw error;
          if (newest.first <= this.#acknowledged) throw acknowledgedTorn(newest.key);
          await this.#client.send(
            new DeleteObjectCommand({ Bucket: this.#bucket, Key: newest.key }),
            { abortSignal: this.#signal() },
          );
        }
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    throw new LedgerError("corrupt", `The newest batches under ${this.#prefix} are damaged`);
  }

  /** Batches holding seqs below `before`, newest first, `max` refs per listing page. */
  #batches(
    before: number | undefined,
    max: number,
    rewrites?: { key: string; first: number }[],
  ): AsyncGenerator<BatchRef> {
    const prefix = this.#prefix;
    return listBatches(this.#client, this.#bucket, prefix, before, max, this.#signal, rewrites);
  }

  #readBatch(ref: BatchRef): Promise<StoredBatch | undefined> {
    return readBatch(this.#client, this.#bucket, ref, this.#signal());
  }

  async readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    if (limit <= 0) return out;
    try {
      // Batches below the floor may outlive a retention pass that stopped halfway: never served.
      const floor = await this.first();
      if (before !== undefined && before <= floor) return out;
      // The keys tell which seqs each object holds, so list first, then fetch exactly the
      // objects the page needs, several at a time. A listing tells where each batch ends
      // except the first it lists: the newest batch surely holds one entry, and the batch
      // listed first below a cursor holds the seq just below it, unless the track ends
      // lower; then the page comes up short and listing goes on below what was read.
      // Positions compaction removed make a round come up short too: each next round lists
      // twice as wide (fetching a few objects at a time, until the page is full).
      let cursor = before;
      let window = limit;
      while (out.length < limit) {
        const want = Math.max(limit - out.length, window);
        const refs: BatchRef[] = [];
        let covered = 0;
        for await (const ref of this.#batches(cursor, want)) {
          refs.push(ref);
          const last = ref.last ?? (cursor === undefined ? ref.first : cursor - 1);
          const top = cursor === undefined ? last : Math.min(last, cursor - 1);
          covered += Math.max(0, top - ref.first + 1);
          if (covered >= want) break;
        }
        if (refs.length === 0) break;
        const below = cursor;
        for (let at = 0; at < refs.length && out.length < limit; at += READ_CONCURRENCY) {
          const chunk = refs.slice(at, at + READ_CONCURRENCY);
          const batches = await mapLimited(chunk, READ_CONCURRENCY, async (ref, i) => {
            try {
              return (await this.#readBatch(ref))?.entries ?? [];
            } catch (error) {
              // The newest object may be a PUT still in progress on some servers: not committed.
              if (at + i === 0 && below === undefined && error instanceof TornBatch) {
                if (ref.first > this.#acknowledged) return [];
                throw acknowledgedTorn(ref.key);
              }
              throw error;
            }
          });
          for (const entries of batches) {
            for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
              const entry = entries[i]!;
              if (entry.seq >= floor && (below === undefined || entry.seq < below)) out.push(entry);
            }
          }
        }
        cursor = refs[refs.length - 1]!.first;
        if (cursor <= floor) break;
        window = Math.min(window * 2, MAX_WINDOW);
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    return out;
  }

  async readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    if (limit <= 0) return out;
    try {
      let from = Math.max(await this.first(), (after ?? -1) + 1);
      let window = limit;
      while (out.length < limit) {
        const to = from + window; // exclusive
        // A listing only ascends, which is newest first here: list from the batch holding
        // `to - 1` down to the one holding `from`, then fetch those objects oldest first, a
        // few at a time, until the page is full.
        const refs: BatchRef[] = [];
        for await (const ref of this.#batches(to, Math.min(window, 1000))) {
          if (ref.last !== undefined && ref.last < from) break;
          refs.push(ref);
          if (ref.first <= from) break;
        }
        if (refs.length === 0) break;
        refs.reverse();
        let top: number | undefined;
        for (let at = 0; at < refs.length && out.length < limit; at += READ_CONCURRENCY) {
          const chunk = refs.slice(at, at + READ_CONCURRENCY);
          const batches = await mapLimited(chunk, READ_CONCURRENCY, async (ref, i) => {
            try {
              return await this.#readBatch(ref);
            } catch (error) {
              // The track's newest object may be a PUT still in progress on some servers.
              const newest = at + i === refs.length - 1;
              if (newest && error instanceof TornBatch && await this.#isNewest(ref)) {
                if (ref.first > this.#acknowledged) return;
                throw acknowledgedTorn(ref.key);
              }
              throw error;
            }
          });
          for (const batch of batches) {
            for (const entry of batch?.entries ?? []) {
              if (entry.seq >= from && entry.seq < to && out.length < limit) out.push(entry);
            }
          }
          top = batches[batches.length - 1]?.last;
        }
        // Short, either at the track's end (the batch listed first, holding the highest seq
        // below `to`, ends below `to - 1`: it is the newest) or for positions compaction
        // removed, read past in windows twice as wide each round.
        if (out.length >= limit || top === undefined || top < to - 1) break;
        from = to;
        window = Math.min(window * 2, MAX_WINDOW);
      }
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
    return out;
  }

  async #isNewest(ref: BatchRef): Promise<boolean> {
    for await (const newest of this.#batches(undefined, 1)) return newest.key === ref.key;
    return false;
  }

  async get(seq: number): Promise<LedgerEntry | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
    try {
      // Only the batch holding `seq`: a position compaction removed is not looked for below.
      if (seq < await this.first()) return undefined;
      for await (const ref of this.#batches(seq + 1, 1)) {
        return (await this.#readBatch(ref))?.entries.find((e) => e.seq === seq);
      }
      return undefined;
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  async first(): Promise<number> {
    if (this.#floor !== undefined) return this.#floor;
    try {
      const object = await getObject(this.#client, this.#bucket, this.#floorKey, this.#signal());
      const floor = object ? Number(new TextDecoder().decode(object.body)) : 0;
      if (!Number.isSafeInteger(floor) || floor < 0) {
        throw new LedgerError("corrupt", `The floor object ${this.#floorKey} is damaged`);
      }
      return this.#floor ??= floor;
    } catch (error) {
      throw translate(error, "Cannot read the ledger");
    }
  }

  // Beside the batches, under a name no batch key can have, so listings skip it.
  get #floorKey(): string {
    return `${this.#prefix}floor`;
  }

  /**
   * Raises the floor to the first seq of the batch holding `before` (a PUT,
   * so readers stop serving what lies below at once), then deletes every
   * batch object below it. Killed between the two, the leftovers are never
   * served and the next pass deletes them. Never the newest batch.
   */
  trim(before: number): Promise<number> {
    return this.#erasing.run(async () => {
      try {
        const refs: BatchRef[] = [];
        const rewrites: { key: string; first: number }[] = [];
        for await (const ref of this.#batches(before + 1, 1000, rewrites)) refs.push(ref);
        const holding = refs.shift();
        const floor = await this.first();
        if (!holding) return floor;
        if (holding.first > floor) {
          await this.#client.send(
            new PutObjectCommand({
              Bucket: this.#bucket,
              Key: this.#floorKey,
              Body: String(holding.first),
              ContentType: "text/plain",
            }),
            { abortSignal: this.#signal() },
          );
          this.#floor = holding.first;
        }
        // With them, the copies a rewrite killed halfway left beside them.
        const keys = [
          ...refs.map((ref) => ref.key),
          ...rewrites.filter((r) => r.first < holding.first).map((r) => r.key),
        ];
        await mapLimited(keys, READ_CONCURRENCY, (key) =>
          this.#client.send(
            new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }),
            { abortSignal: this.#signal() },
          ));
        return this.#floor ?? floor;
      } catch (error) {
        throw translate(error, "Cannot remove old records from the ledger");
      }
    });
  }

  erasePayload(seq: number): Promise<void> {
    // Serialised so two erasures in one batch object never overwrite each other.
    return this.#erasing.run(async () => {
      try {
        for await (const ref of this.#batches(seq + 1, 1)) {
          if (seq < ref.first || (ref.last !== undefined && seq > ref.last)) return;
          const batch = await this.#readBatch(ref);
          let found = false;
          const rewritten = (batch?.entries ?? []).map((entry) => {
            if (entry.seq !== seq || (entry.payload ?? entry.bytes) === undefined) return entry;
            found = true;
            return withoutPayload(entry);
          });
          if (!found) return;
          await this.#rewrite(ref.key, rewritten, batch?.span);
          return;
        }
      } catch (error) {
        throw translate(error, "Cannot redact in the ledger");
      }
    });
  }
  /**
   * Compaction: rewrites each batch object holding some of `seqs` without
   * them, in place (one PUT each, atomic: a pass killed halfway leaves each
   * object old or new), naming the span it was committed with so readers
   * still know where it ends. Never the newest record, nor the floor's.
   */
  remove(seqs: readonly number[]): Promise<number> {
    return this.#erasing.run(async () => {
      try {
        const goes = [...seqs].sort((a, b) => a - b);
        const highest = goes[goes.length - 1];
        if (highest === undefined) return 0;
        const floor = await this.first();
        const newest = (await this.latest())?.seq ?? -1;
        // Listed newest first from the batch holding the highest: each takes its share.
        const work: { ref: BatchRef; seqs: Set<number> }[] = [];
        let i = goes.length - 1;
        for await (const ref of this.#batches(highest + 1, 1000)) {
          const mine = new Set<number>();
          for (; i >= 0 && goes[i]! >= ref.first; i--) {
            const seq = goes[i]!;
            if (seq <= (ref.last ?? highest) && seq > floor && seq < newest) mine.add(seq);
          }
          if (mine.size > 0) work.push({ ref, seqs: mine });
          if (i < 0) break;
        }
        const removed = await mapLimited(work, READ_CONCURRENCY, async ({ ref, seqs }) => {
          const batch = await this.#readBatch(ref);
          if (!batch) return 0;
          const kept = batch.entries.filter((e) => !seqs.has(e.seq));
          if (kept.length === batch.entries.length && !batch.repaired) return 0;
          const span = batch.span ?? { first: ref.first, last: batch.last };
          await this.#rewrite(ref.key, kept, span);
          return batch.entries.length - kept.length;
        });
        return removed.reduce((a, b) => a + b, 0);
      } catch (error) {
        throw translate(error, "Cannot remove superseded records from the ledger");
      }
    });
  }
}

/** Objects fetched at once for one history page. */
const READ_CONCURRENCY = 16;
/** Widest run of positions a forward page lists at once while reading past compacted ones. */
const MAX_WINDOW = 65_536;
