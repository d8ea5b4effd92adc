// Crash safety of compaction: a real process compacting three tracks of a PostgreSQL,
// directory or S3 ledger at the shipped defaults (1,000 rows per delete; 1 MiB segments,
// each rewritten beside itself and renamed over; each batch object rewritten by one PUT)
// is killed with SIGKILL at a random moment after the pass started. After each
// kill every track still holds the newest record of every key, its first and newest
// records where they were, and only records as committed; a pass run afterwards
// leaves exactly one record per key (plus the track's first).
import assert from "node:assert/strict";
import { Retention, type TrackPath } from "../../src/ledger/mod.ts";
import { seededRandom } from "../support/random.ts";
import {
  type CrashLedger,
  crashTestPerBackend,
  killDuringPass,
  withLedger,
} from "./_pass_crash.ts";

const TRACKS = 3;
const RECORDS = 12_000;
const KEYS = 100;
const ROUNDS = 3;

const trackPath = (t: number): TrackPath => ({ broadcast: ["crash", `c${t}`], track: "state" });
const payloadOf = (t: number, seq: number): string =>
  JSON.stringify({ key: `k${seq % KEYS}`, t, seq, pad: "p".repeat(600) });

/** Checks every track; returns how many records each stores. */
async function checkConsistent(at: CrashLedger, context: string): Promise<number[]> {
  return await withLedger(at, async (ledger) => {
    const counts: number[] = [];
    for (let t = 0; t < TRACKS; t++) {
      const track = (await ledger.track(trackPath(t), false))!;
      const entries = await Array.fromAsync(track.entries({}));
      assert.equal(track.newest?.seq, RECORDS - 1, `track ${t} keeps its newest (${context})`);
      assert.equal(await track.first(), 0, `track ${t} keeps its first (${context})`);
      for (const e of entries) {
        assert.equal(e.payload, payloadOf(t, e.seq), `track ${t} record ${e.seq} (${context})`);
      }
      const seqs = new Set(entries.map((e) => e.seq));
      for (let seq = RECORDS - KEYS; seq < RECORDS; seq += 1) {
        assert.ok(seqs.has(seq), `track ${t} keeps the newest of key k${seq % KEYS} (${context})`);
      }
      counts.push(entries.length);
    }
    return counts;
  });
}

// Per backend: appends in flight while filling (S3: 100, so about 120 batch objects a
// track, each rewritten by one PUT), and the latest kill after the pass started (a pass
// over all three takes about a second on PostgreSQL or a directory, 8 s on s3rver).
const SHAPE: Record<string, { batch: number; maxDelayMs: number }> = {
  directory: { batch: 1000, maxDelayMs: 400 },
  postgres: { batch: 1000, maxDelayMs: 400 },
  s3: { batch: 100, maxDelayMs: 6000 },
};

crashTestPerBackend(
  "compaction: kill -9 during a pass keeps every key's newest and every kept record",
  async (at, backend) => {
    const { batch, maxDelayMs } = SHAPE[backend]!;
    const seed = Number(Deno.env.get("SLUICE_CRASH_SEED")) ||
      crypto.getRandomValues(new Uint32Array(1))[0]!;
    const random = seededRandom(seed);
    await withLedger(at, async (ledger) => {
      for (let t = 0; t < TRACKS; t++) {
        const track = (await ledger.track(trackPath(t), true))!;
        for (let seq = 0; seq < RECORDS; seq += batch) {
          await Promise.all(
            Array.from(
              { length: batch },
              (_, i) => track.append({ payload: payloadOf(t, seq + i) }),
            ),
          );
        }
      }
    });
    const seen: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // A random moment after the pass started: each round kills it inside what is left.
      const delay = Math.floor(random() * maxDelayMs);
      const killed = await killDuringPass(at, { count: 0, compact: "key" }, "start", delay);
      const counts = await checkConsistent(at, `round ${round}, ${delay} ms, seed ${seed}`);
      seen.push(`${killed ? "killed" : "finished"} at ${delay} ms: ${counts.join("/")} stored`);
    }
    await withLedger(at, async (ledger) => {
      await new Retention(ledger, { config: { default: { compactKey: "key" }, rules: [] } }).pass();
    });
    const counts = await checkConsistent(at, `final pass, seed ${seed}`);
    assert.deepEqual(counts, Array(TRACKS).fill(KEYS + 1), seen.join("; "));
    console.log(`${seen.join("; ")}; final ${counts.join("/")} stored`);
  },
);
