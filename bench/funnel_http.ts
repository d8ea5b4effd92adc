/**
 * POST throughput of the funnel over loopback, with auth off and on, next
 * to a bare `Deno.serve` handler measured in the same run. Each server runs
 * in its own process; wrk drives the load when installed, else a raw-TCP
 * Deno client.
 *
 * The servers are measured in turn, `--rounds` times (default 3), and the
 * ratios of each round and their medians are printed: on a shared VM one
 * round can be off by a third.
 *
 * `--threads` adds ingest on several threads (the experiment in
 * `support/ingest_threads/`, see docs/funnel.md): the bare handler on two
 * threads sharing the port as a second ceiling, and the funnel's handler
 * with 1 and 2 HTTP threads (main thread + worker on one port), and as a
 * pipeline (1 and 2 worker HTTP threads, the main thread only commits).
 *
 * `--compare <checkout>` also measures the funnel of another checkout (its
 * `src/cli.ts`) in the same rounds: a before/after with the same ceiling.
 *
 *   deno run -A bench/funnel_http.ts [--seconds 5] [--connections 32] [--rounds 3] [--threads]
 *     [--compare ../main]
 */
import { benchArgs } from "./support/args.ts";
import { writeBenchPoster } from "./support/key_set.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks } from "./support/loadgen/proc_stats.ts";
import {
  loadGeneratorName,
  postLoad,
  type SpawnedServer,
  spawnListening,
} from "./support/post_load.ts";
import { ingestBase, startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  seconds: { type: "string", default: "5" },
  connections: { type: "string", default: "32" },
  rounds: { type: "string", default: "3" },
  threads: { type: "boolean", default: false },
  compare: { type: "string" },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const BARE = new URL("./support/bare_server.ts", import.meta.url).pathname;
const THREADED = new URL("./support/ingest_threads/server.ts", import.meta.url).pathname;
const PATH = "/tracks/bench/room/chat";
const BODY = '{"kind":"reaction","emoji":"👍","at":1234567890}';
const PORT_LINE = /(?:listening |Ingest: http:\/\/127\.0\.0\.1:)(\d+)/;

/** A server under load: a funnel (`cli`, started by the process helper) or another `deno` script. */
type Server = { readonly cli: string } | { readonly args: string[] };

async function listen(server: Server, env: Record<string, string>): Promise<SpawnedServer> {
  if ("args" in server) return await spawnListening(server.args, env, PORT_LINE);
  const funnel = await startServer("funnel", {
    cli: server.cli,
    flags: "all",
    env,
    clearEnv: true,
  });
  return {
    port: Number(new URL(ingestBase(funnel)).port),
    pid: funnel.pid,
    stop: async () => void await funnel.stop(),
  };
}

async function measure(
  name: string,
  what: Server,
  env: Record<string, string>,
  headers: Record<string, string>,
): Promise<{ rate: number; cpuUs: number }> {
  const server = await listen(what, env);
  try {
    const load = (secs: number) =>
      postLoad({ port: server.port, path: PATH, body: BODY, headers, connections, seconds: secs });
    await load(1); // warm up: JIT, connections
    const ticks = cpuTicks(server.pid);
    const r = await load(seconds);
    // Server CPU (all its threads, user + system) per request: what more threads cost.
    const cpuUs = ((cpuTicks(server.pid) - ticks) * 1e6) / CLOCK_TICKS_PER_SECOND / r.requests;
    console.log(
      `${name.padEnd(22)} ${r.perSecond.toFixed(0).padStart(8)} req/s   p50 ${
        r.p50Ms.toFixed(2)
      } ms   p99 ${r.p99Ms.toFixed(2)} ms   CPU ${cpuUs.toFixed(1)} µs/req   errors ${r.errors}`,
    );
    return { rate: r.perSecond, cpuUs };
  } finally {
    await server.stop();
  }
}

const dir = await Deno.makeTempDir({ prefix: "sluice-bench-" });
try {
  const { keysFile: keys, token } = await writeBenchPoster(dir);

  const funnel = { cli: CLI };
  const base = { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" };
  const auth = { authorization: `Bearer ${token}` };
  const withAuth = { ...base, SLUICE_AUTH_KEYS: keys };
  const threaded = (flags: string[], on: boolean) => [
    "run",
    "-A",
    THREADED,
    ...flags,
    ...(on ? ["--keys", keys] : []),
  ];
  interface Case {
    readonly name: string;
    readonly server: Server;
    readonly env: Record<string, string>;
    readonly headers: Record<string, string>;
  }
  const cases: Case[] = [
    { name: "bare Deno.serve", server: { args: ["run", "-A", BARE] }, env: base, headers: {} },
    { name: "funnel, auth off", server: funnel, env: base, headers: {} },
    { name: "funnel, auth on", server: funnel, env: withAuth, headers: auth },
  ];
  if (values.compare !== undefined) {
    const other = { cli: `${values.compare}/src/cli.ts` };
    cases.push({ name: "compared, auth off", server: other, env: base, headers: {} });
    cases.push({ name: "compared, auth on", server: other, env: withAuth, headers: auth });
  }
  if (values.threads) {
    cases.push({
      name: "bare, 2 threads",
      server: { args: ["run", "-A", BARE, "0", "2"] },
      env: {},
      headers: {},
    });
    for (const on of [false, true]) {
      const a = on ? "on" : "off";
      const headers = on ? auth : {};
      for (
        const [label, flags] of [
          ["1 thread", ["--threads", "1"]],
          ["2 threads", ["--threads", "2"]],
          ["pipe 1", ["--threads", "1", "--pipeline"]],
          ["pipe 2", ["--threads", "2", "--pipeline"]],
        ] as const
      ) {
        cases.push({
          name: `${label}, auth ${a}`,
          server: { args: threaded([...flags], on) },
          env: {},
          headers,
        });
      }
    }
  }
  console.log(`load generator: ${loadGeneratorName()}`);
  console.log(
    `POST throughput, ${connections} keep-alive connections, ${seconds} s each, loopback, ${navigator.hardwareConcurrency} cores`,
  );
  const rates = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const cpus = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const ratios = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) console.log(`round ${round} of ${rounds}`);
    let bare = 0;
    const line: string[] = [];
    for (const c of cases) {
      const { rate, cpuUs } = await measure(c.name, c.server, c.env, c.headers);
      if (c === cases[0]) bare = rate;
      rates.get(c.name)!.push(rate);
      cpus.get(c.name)!.push(cpuUs);
      ratios.get(c.name)!.push(rate / bare);
      if (c !== cases[0]) line.push(`${c.name} ${percent(rate / bare)}`);
    }
    console.log(`of bare: ${line.join("; ")}`);
  }
  console.log(
    `median of ${rounds} rounds (req/s, % of the bare single-thread handler, server CPU per request):`,
  );
  for (const c of cases) {
    console.log(
      `  ${c.name.padEnd(22)} ${median(rates.get(c.name)!).toFixed(0).padStart(8)} req/s  ${
        percent(median(ratios.get(c.name)!)).padStart(5)
      }  ${median(cpus.get(c.name)!).toFixed(1).padStart(5)} µs`,
    );
  }
  console.log("(target for the funnel with auth on: >= 60% of bare)");
} finally {
  await Deno.remove(dir, { recursive: true });
}

function percent(ratio: number): string {
  return `${(100 * ratio).toFixed(0)}%`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
