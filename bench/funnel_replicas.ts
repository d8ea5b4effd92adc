// Funnels as a service: N funnel processes on one PostgreSQL ledger publishing through
// one relay process, the scenario of "two replicas behind a load balancer".
//
//   deno run -A bench/funnel_replicas.ts scenario [--funnels 2] [--rate 120] [--seconds 12]
//     Posts at a fixed rate spread over the funnels (a failed POST is retried on the next
//     funnel with its Idempotency-Key, as behind a load balancer; every 10th key is also
//     sent to another funnel at once), SIGKILLs the first funnel mid-run and restarts it,
//     and reads the track on the relay. Prints: answers by status (503 share), keys
//     stored twice, acknowledged records not in history (lost), acknowledged records
//     that never reached the relay's subscriber.
//   deno run -A bench/funnel_replicas.ts throughput [--funnels 1,2] [--connections 32] [--seconds 8]
//     Closed-loop POSTs into one track through 1, then 2 funnels in the same run: records/s,
//     and the funnels' CPU per record (from /proc) as the cost of coordination.
//
// --cli <path to src/cli.ts> runs another checkout's funnel and relay (for before/after).
// PostgreSQL: SLUICE_BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/test.
import postgres from "postgres";
import { sleep } from "../src/timers/mod.ts";
import { benchMesh, type BenchRelay } from "./support/relay_processes.ts";
import { benchArgs } from "./support/args.ts";
import { ingestBase, type ServerProcess, startServer } from "../tests/support/processes.ts";

const { values, positionals } = benchArgs({
  funnels: { type: "string" },
  rate: { type: "string", default: "120" },
  seconds: { type: "string" },
  connections: { type: "string", default: "32" },
  cli: { type: "string" },
}, {
  allowPositionals: true,
  usage:
    "deno run -A bench/funnel_replicas.ts [scenario|throughput] [--funnels 1,2] [--rate 120] " +
    "[--seconds S] [--connections 32] [--cli <other checkout>/src/cli.ts]",
});
const mode = positionals[0] ?? "scenario";
const CLI = values.cli ?? new URL("../src/cli.ts", import.meta.url).pathname;
const PG = Deno.env.get("SLUICE_BENCH_PG_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
const TRACK = "bench/1/chat";

interface Funnel {
  readonly child: Deno.ChildProcess;
  readonly base: string;
  readonly lines: string[];
  readonly process: ServerProcess;
}

async function startFunnel(ledger: string, relay: BenchRelay, caFile: string): Promise<Funnel> {
  const process = await startServer("funnel", {
    env: {
      FUNNEL_ADDR: "127.0.0.1:0",
      LEDGER_URI: ledger,
      RELAY_URL: `moqt://localhost:${relay.port}/`,
      RELAY_CA_FILE: caFile,
    },
    cli: CLI,
  });
  return { child: process.child, base: ingestBase(process), lines: process.lines, process };
}

function kill(f: Funnel): Promise<Deno.CommandStatus> {
  return f.process.kill();
}

/** User + system CPU seconds of a process, from /proc. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = (await Deno.readTextFile(`/proc/${pid}/stat`)).split(") ")[1]!.split(" ");
  return (Number(stat[11]) + Number(stat[12])) / 100;
}

async function history(base: string): Promise<{ group: string; payload: unknown }[]> {
  const out: { group: string; payload: unknown }[] = [];
  let after = "e000000-g00000000";
  for (;;) {
    const r = await fetch(`${base}/tracks/${TRACK}?limit=200&after=${after}`);
    const page = await r.json() as {
      records: { group: string; payload: unknown }[];
      after?: string;
    };
    out.push(...page.records);
    if (!page.after) return out;
    after = page.after;
  }
}

const seqOf = (group: string) => Number(/g(\d+)$/.exec(group)![1]);

async function withSetup<T>(
  funnels: number,
  run: (relay: BenchRelay, list: Funnel[], ledger: string, ca: string) => Promise<T>,
): Promise<T> {
  const table = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const ledger = `${PG}?table=${table}`;
  const mesh = await benchMesh();
  const list: Funnel[] = [];
  try {
    const relay = await mesh.relay("r");
    for (let i = 0; i < funnels; i++) {
      list.push(await startFunnel(ledger, relay, `${mesh.dir}/cert.pem`));
    }
    await fetch(`${list[0]!.base}/tracks/${TRACK}`, { method: "PUT" }).then((r) =>
      r.body?.cancel()
    );
    await sleep(1500); // every funnel has learned of the track and announced it
    return await run(relay, list, ledger, `${mesh.dir}/cert.pem`);
  } finally {
    for (const f of list) await kill(f);
    await mesh.close();
    const sql = postgres(PG, { max: 1, onnotice: () => {} });
    await sql`drop table if exists ${sql(table)}`;
    await sql.end();
  }
}

async function scenario(): Promise<void> {
  const n = Number(values.funnels ?? "2");
  const rate = Number(values.rate);
  const seconds = Number(values.seconds ?? "12");
  await withSetup(n, async (relay, funnels, ledger, ca) => {
    const moq = await relay.dial();
    const received: number[] = [];
    let reading = true;
    let subscriptions = 0;
    (async () => {
      while (reading) {
        subscriptions++;
        try {
          for await (const g of moq.subscribe("bench/1", "chat")) received.push(g.sequence);
        } catch {
          // ended (the old funnel's route went away): subscribe again
        }
        await sleep(100);
      }
    })();
    const statuses = new Map<string, number>();
    const note = (s: string) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
    const acked = new Map<string, string>();
    let mismatched = 0;
    const send = async (f: number, key: string): Promise<string | undefined> => {
      try {
        const r = await fetch(`${funnels[f % funnels.length]!.base}/tracks/${TRACK}`, {
          method: "POST",
          body: JSON.stringify(key),
          headers: { "idempotency-key": key },
        });
        note(String(r.status));
        if (r.status !== 201) return void await r.body?.cancel();
        return ((await r.json()) as { group: string }).group;
      } catch {
        note("connection failed");
        return undefined;
      }
    };
    const one = async (i: number) => {
      const key = `k${i}`;
      const also = i % 10 === 0 ? send(i + 1, key) : undefined;
      let group: string | undefined;
      for (let attempt = 0; group === undefined && attempt < 50; attempt++) {
        group = await send(i + attempt, key);
        if (group === undefined) await sleep(100);
      }
      const other = await also;
      if (group !== undefined) acked.set(key, group);
      if (group !== undefined && other !== undefined && other !== group) mismatched++;
    };
    const pending: Promise<void>[] = [];
    const started = Date.now();
    let killedAt = 0;
    for (let i = 0; Date.now() - started < seconds * 1000; i++) {
      pending.push(one(i));
      if (!killedAt && Date.now() - started > (seconds * 1000) / 3) {
        killedAt = Date.now();
        await kill(funnels[0]!);
        // Restarted a little later, as a supervisor would.
        setTimeout(async () => (funnels[0] = await startFunnel(ledger, relay, ca)), 1000);
      }
      await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - Date.now()));
    }
    await Promise.all(pending);
    await sleep(3000);
    reading = false;
    const rows = await history(funnels[funnels.length - 1]!.base);
    const stored = new Map<string, string[]>();
    for (const r of rows) {
      stored.set(String(r.payload), [...(stored.get(String(r.payload)) ?? []), r.group]);
    }
    const twice = [...stored.values()].filter((g) => g.length > 1).length;
    const lost = [...acked].filter(([k, g]) => !(stored.get(k) ?? []).includes(g)).length;
    const first = Math.min(...received);
    const got = new Set(received);
    const expected = [...acked.values()].map((g) => seqOf(g) + 1).filter((s) => s >= first);
    const unseen = expected.filter((s) => !got.has(s)).length;
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({
      funnels: n,
      rate,
      seconds,
      answers: Object.fromEntries(statuses),
      share503: +((statuses.get("503") ?? 0) / total).toFixed(3),
      acknowledged: acked.size,
      keysStoredTwice: twice,
      keySentToTwoFunnelsDifferentGroups: mismatched,
      acknowledgedButLost: lost,
      liveExpected: expected.length,
      notReachingSubscriber: unseen,
      duplicatedAtSubscriber: received.length - got.size,
      // More than 1: the subscription ended and a new one started at the latest record.
      subscriptions,
    }));
    moq.close();
  });
}

async function throughput(): Promise<void> {
  const counts = (values.funnels ?? "1,2").split(",").map(Number);
  const seconds = Number(values.seconds ?? "8");
  const connections = Number(values.connections);
  for (const n of counts) {
    await withSetup(n, async (_relay, funnels) => {
      const cpu0 = await Promise.all(funnels.map((f) => cpuSeconds(f.child.pid)));
      let done = 0;
      let failed = 0;
      const until = Date.now() + seconds * 1000;
      const latencies: number[] = [];
      await Promise.all(Array.from({ length: connections }, async (_, c) => {
        for (let i = 0; Date.now() < until; i++) {
          const t = performance.now();
          const r = await fetch(`${funnels[c % n]!.base}/tracks/${TRACK}`, {
            method: "POST",
            body: `{"c":${c},"i":${i}}`,
          });
          await r.body?.cancel();
          if (r.status === 201) (done++, latencies.push(performance.now() - t));
          else failed++;
        }
      }));
      const cpu1 = await Promise.all(funnels.map((f) => cpuSeconds(f.child.pid)));
      const cpu = cpu1.reduce((a, b, i) => a + b - cpu0[i]!, 0);
      latencies.sort((a, b) => a - b);
      console.log(JSON.stringify({
        funnels: n,
        connections,
        recordsPerSecond: Math.round(done / seconds),
        failed,
        p50ms: +latencies[Math.floor(latencies.length / 2)]!.toFixed(2),
        p99ms: +latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2),
        funnelCpuMicrosPerRecord: Math.round((cpu / done) * 1e6),
      }));
    });
  }
}

if (mode === "throughput") await throughput();
else await scenario();
