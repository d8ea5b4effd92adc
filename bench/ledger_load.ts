// Ledger load: records/s and append latency with 64 concurrent appenders into one
// track, for every backend in the same run.
//
//   deno run --allow-all bench/ledger_load.ts [seconds-per-backend] [backends...]
//
// PostgreSQL comes from SLUICE_TEST_PG_URL or 127.0.0.1:5432/test (skipped if absent);
// S3 is an in-process s3rver (it shares this process's CPU with the client).
import { DirectoryBackend, Ledger, type LedgerBackend, MemoryBackend } from "../src/ledger/mod.ts";
import { loadPostgresBackend } from "../src/ledger/mod.ts";
import { loadS3Backend } from "../src/ledger/mod.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { startS3rver } from "../tests/support/s3rver.ts";
import { quantile } from "./support/quantile.ts";
import { benchArgs } from "./support/args.ts";

const SENDERS = 64;
const { positionals } = benchArgs({}, {
  allowPositionals: true,
  usage: "deno run --allow-all bench/ledger_load.ts [seconds-per-backend] [backends...]",
});
const seconds = Number(positionals[0] ?? 3);
const only = positionals.slice(1);

interface Result {
  readonly backend: string;
  readonly records: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly batches: number;
}

async function load(name: string, backend: LedgerBackend): Promise<Result> {
  let batches = 0;
  const ledger = new Ledger(backend);
  ledger.commits.subscribe({ committed: () => void batches++ });
  const track = (await ledger.track({ broadcast: ["bench", name], track: "load" }, true))!;
  const payload = JSON.stringify({
    text: "hello from a sender, about a hundred bytes of chat",
    n: 1,
  });
  // Warm up connections and JIT.
  await Promise.all(Array.from({ length: SENDERS }, () => track.append({ payload })));
  batches = 0;
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  const sender = async (s: number): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await track.append({ payload, sender: `sender-${s}` });
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, (_, s) => sender(s)));
  const elapsed = (performance.now() - start) / 1000;
  await ledger.close();
  latencies.sort((a, b) => a - b);
  const pick = (q: number): number => quantile(latencies, q);
  return {
    backend: name,
    records: latencies.length,
    perSecond: latencies.length / elapsed,
    p50: pick(0.5),
    p99: pick(0.99),
    batches,
  };
}

const want = (name: string): boolean => only.length === 0 || only.includes(name);
const results: Result[] = [];

if (want("memory")) results.push(await load("memory", new MemoryBackend()));
if (want("directory")) {
  const dir = await Deno.makeTempDir({ prefix: "sluice-bench-" });
  try {
    results.push(await load("directory", await DirectoryBackend.open(dir)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
if (want("postgres")) {
  const url = await findPostgres();
  if (url) {
    const table = freshTableName();
    try {
      results.push(
        await load(
          "postgres",
          await (await loadPostgresBackend()).PostgresBackend.open(url, table),
        ),
      );
    } finally {
      await dropTable(url, table);
    }
  }
}
if (want("s3")) {
  const s3 = await startS3rver();
  try {
    const backend = await (await loadS3Backend()).S3Backend.open(s3.backendOptions("bench"));
    results.push(await load("s3", backend));
  } finally {
    await s3.stop();
  }
}

console.log(`${SENDERS} concurrent appenders, one track, ${seconds}s per backend`);
console.log("backend     records/s   p50 ms   p99 ms   records/batch");
for (const r of results) {
  console.log(
    `${r.backend.padEnd(10)} ${r.perSecond.toFixed(0).padStart(10)} ${
      r.p50.toFixed(2).padStart(8)
    } ${r.p99.toFixed(2).padStart(8)} ${
      (r.records / Math.max(1, r.batches)).toFixed(1).padStart(15)
    }`,
  );
}
