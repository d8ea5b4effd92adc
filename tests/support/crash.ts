// Shared by the crash tests: a seeded kill schedule and the check that every
// acknowledged record survived exactly once, in order, with nothing half-visible.
import assert from "node:assert/strict";
import { Ledger, type LedgerEntry, openBackend, parseLedgerUri } from "../../src/ledger/mod.ts";
import type { StoreCredentials } from "../../src/ledger/mod.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "./postgres.ts";
import { seededRandom } from "./random.ts";
import { ignoreWithout } from "./requires.ts";
import { startS3rver } from "./s3rver.ts";
import { withTempDir } from "./temp_dir.ts";

/** Kill-and-restart rounds per backend. */
export const RUNS = 4;
/** Concurrent appenders (or HTTP senders) in the process that is killed. */
export const WORKERS = 16;

/** One acknowledged record: its ledger seq and the payload text sent. */
export interface Ack {
  readonly seq: number;
  readonly payload: string;
}

/** Starts a writer for round `run`, SIGKILLs it after `killAfter` acks, returns what it acked. */
export type RunAndKill = (
  uri: string,
  run: number,
  killAfter: number,
  credentials?: StoreCredentials,
) => Promise<Ack[]>;

async function readEverything(uri: string, credentials?: StoreCredentials): Promise<LedgerEntry[]> {
  const ledger = new Ledger(await openBackend(parseLedgerUri(uri), credentials));
  try {
    const track = await ledger.track({ broadcast: ["crash"], track: "test" }, false);
    if (!track) return [];
    const out: LedgerEntry[] = [];
    let before: number | undefined;
    while (true) {
      const page = await track.backend.readBefore(before, 200);
      if (page.length === 0) break;
      out.push(...page);
      before = page[page.length - 1]!.seq;
    }
    return out.reverse();
  } finally {
    await ledger.close();
  }
}

/** Runs {@link RUNS} kill rounds against one ledger and checks it after each. */
export async function crashLoop(
  runAndKill: RunAndKill,
  uri: string,
  credentials?: StoreCredentials,
): Promise<void> {
  // Set SLUICE_CRASH_SEED to replay the kill schedule a failure message names.
  const seed = Number(Deno.env.get("SLUICE_CRASH_SEED")) ||
    crypto.getRandomValues(new Uint32Array(1))[0]!;
  const random = seededRandom(seed);
  const acked = new Map<number, string>();
  for (let run = 0; run < RUNS; run++) {
    const killAfter = 1 + Math.floor(random() * 600);
    const acks = await runAndKill(uri, run, killAfter, credentials);
    for (const ack of acks) {
      assert.equal(
        acked.get(ack.seq),
        undefined,
        `seq ${ack.seq} acknowledged twice (seed ${seed})`,
      );
      acked.set(ack.seq, ack.payload);
    }
    const stored = await readEverything(uri, credentials);
    const context = `run ${run}, kill after ${killAfter} acks, seed ${seed}`;
    // Numbered 0..n-1 with no gap or duplicate: nothing lost, nothing half-visible.
    stored.forEach((entry, i) => assert.equal(entry.seq, i, context));
    for (const [seq, payload] of acked) {
      assert.equal(stored[seq]?.payload, payload, `acknowledged seq ${seq} survives (${context})`);
    }
    const payloads = stored.map((e) => e.payload!);
    assert.equal(new Set(payloads).size, payloads.length, `no record stored twice (${context})`);
    // Each caller awaited its previous append, so per caller the stored records are in order
    // and without holes (the one in flight at the kill may or may not be there).
    const next = new Map<string, number>();
    for (const payload of payloads) {
      const { r, w, i } = JSON.parse(payload) as { r: number; w: number; i: number };
      const key = `${r}/${w}`;
      assert.equal(i, next.get(key) ?? 0, `caller ${key} in order (${context})`);
      next.set(key, i + 1);
    }
  }
  assert.ok(acked.size >= RUNS, "every run acknowledged records before it was killed");
}

/** Test names per durable backend. */
export interface CrashTestNames {
  readonly directory: string;
  readonly postgres: string;
  readonly s3: string;
}

/**
 * Registers one {@link crashLoop} test per durable backend: a fresh
 * directory, a fresh PostgreSQL table (skipped when no server is reachable)
 * and an in-process s3rver bucket.
 */
export async function crashTestsPerBackend(
  names: CrashTestNames,
  runAndKill: RunAndKill,
): Promise<void> {
  const pgUrl = await findPostgres();
  Deno.test(names.directory, async () => {
    await withTempDir((dir) => crashLoop(runAndKill, `file://${dir}/ledger`));
  });
  Deno.test({
    name: names.postgres,
    ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
    async fn() {
      const table = freshTableName();
      try {
        const url = new URL(pgUrl!);
        url.searchParams.set("table", table);
        await crashLoop(runAndKill, url.href);
      } finally {
        await dropTable(pgUrl!, table);
      }
    },
  });
  Deno.test(names.s3, async () => {
    const s3 = await startS3rver();
    try {
      await crashLoop(runAndKill, s3.ledgerUri("crash"), s3.credentials);
    } finally {
      await s3.stop();
    }
  });
}
