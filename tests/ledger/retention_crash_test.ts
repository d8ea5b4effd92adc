// Crash safety of retention: a real process running a retention pass over several
// large tracks, at the shipped defaults (1 MiB segments, 1,000 rows per delete, one
// object per batch), is killed with SIGKILL at a random moment after it cut its first
// track, so inside the pass (a later track often half cut). After each kill every
// track reads as a contiguous run from its first available record to its newest,
// every record in it intact; a pass run afterwards finishes the job.
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
const ROUNDS = 3;

const trackPath = (t: number): TrackPath => ({ broadcast: ["crash", `t${t}`], track: "log" });
const payloadOf = (t: number, seq: number): string =>
  JSON.stringify({ t, seq, pad: "p".repeat(900) });

/** Fills each track with `records` records; `batch` appends in flight at once. */
async function fill(
  at: CrashLedger,
  records: number,
  batch: number,
): Promise<void> {
  await withLedger(at, async (ledger) => {
    for (let t = 0; t < TRACKS; t++) {
      const track = (await ledger.track(trackPath(t), true))!;
      for (let seq = 0; seq < records; seq += batch) {
        const n = Math.min(batch, records - seq);
        await Promise.all(
          Array.from({ length: n }, (_, i) => track.append({ payload: payloadOf(t, seq + i) })),
        );
      }
    }
  });
}

/** Every track is whole from its first available record to its newest. */
async function checkConsistent(
  at: CrashLedger,
  records: number,
  context: string,
): Promise<number[]> {
  return await withLedger(at, async (ledger) => {
    const firsts: number[] = [];
    for (let t = 0; t < TRACKS; t++) {
      const track = (await ledger.track(trackPath(t), false))!;
      const first = await track.first();
      const entries = await Array.fromAsync(track.entries({}));
      assert.equal(track.newest?.seq, records - 1, `track ${t} keeps its newest (${context})`);
      assert.equal(entries.length, records - first, `track ${t} from ${first} (${context})`);
      entries.forEach((e, i) => {
        assert.equal(e.seq, first + i, `track ${t} contiguous (${context})`);
        assert.equal(e.payload, payloadOf(t, e.seq), `track ${t} record ${e.seq} (${context})`);
      });
      firsts.push(first);
    }
    return firsts;
  });
}

async function crashRounds(
  at: CrashLedger,
  records: number,
  batch: number,
  maxDelayMs: number,
  stored?: () => Promise<string[]>,
): Promise<void> {
  const seed = Number(Deno.env.get("SLUICE_CRASH_SEED")) ||
    crypto.getRandomValues(new Uint32Array(1))[0]!;
  const random = seededRandom(seed);
  await fill(at, records, batch);
  let keep = records;
  const seen: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    keep = Math.floor(keep / 2);
    const delay = Math.floor(random() * maxDelayMs);
    // After the first track is cut, so the kill lands inside the pass, during a later track.
    const killed = await killDuringPass(at, { count: keep }, "trimmed ", delay);
    const context = `round ${round}, keep ${keep}, kill after ${delay} ms, seed ${seed}`;
    const firsts = await checkConsistent(at, records, context);
    seen.push(`${killed ? "killed" : "finished"} at ${delay} ms: first ${firsts.join("/")}`);
  }
  // A pass run to the end afterwards leaves each track at most its limit (plus one unit).
  await withLedger(at, async (ledger) => {
    await new Retention(ledger, { config: { default: { maxCount: keep }, rules: [] } }).pass();
  });
  const firsts = await checkConsistent(at, records, `final pass, seed ${seed}`);
  for (const first of firsts) assert.ok(first > 0, `the final pass removed records (${seen})`);
  if (stored) {
    // Leftovers of a pass killed between raising a floor and deleting below it are gone too:
    // no batch object below a floor is left (keys name 9999999999999999 minus the first seq).
    const floor = Math.min(...firsts);
    for (const key of await stored()) {
      const inverted = /\/data\/[^/]+\/(\d{16})$/.exec(key)?.[1];
      if (inverted === undefined) continue;
      const first = Number(9_999_999_999_999_999n - BigInt(inverted));
      assert.ok(first >= floor, `batch ${first} below the floor ${floor} is left (${seen})`);
    }
  }
  console.log(`${seen.join("; ")}; final first ${firsts.join("/")}`);
}

// Per backend: records per track, appends in flight while filling (S3: 2, so a pass
// deletes many objects) and the latest kill after the first track was cut.
const SHAPE: Record<string, { records: number; batch: number; maxDelayMs: number }> = {
  // 1 MiB segments (the default): ~1,100 records of ~1 KB per segment, 8 segments a track.
  directory: { records: 9000, batch: 1000, maxDelayMs: 60 },
  postgres: { records: 8000, batch: 1000, maxDelayMs: 200 },
  s3: { records: 240, batch: 2, maxDelayMs: 200 },
};

crashTestPerBackend(
  "retention: kill -9 during a pass leaves every track whole from its first record",
  async (at, backend, instance) => {
    const { records, batch, maxDelayMs } = SHAPE[backend]!;
    await crashRounds(
      at,
      records,
      batch,
      maxDelayMs,
      backend === "s3" ? () => instance.rawNames() : undefined,
    );
  },
);
