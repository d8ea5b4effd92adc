/**
 * Durable Streams reads, sluice's funnel next to the protocol's reference
 * server (npm `@durable-streams/server`, in-memory, under Node) in the same
 * run, each in its own process:
 *
 * - catch-up: `--records` JSON appends written (16 in flight), then read from
 *   offset -1 following `Stream-Next-Offset` until up to date: records/s;
 * - live: an SSE reader at `offset=now` while `--live` appends are POSTed at
 *   `--rate` per second: POST sent → message read by SSE, p50/p99/max ms.
 *
 * `deno run -A bench/streams.ts [--records 20000] [--live 500] [--rate 200]
 * [--ledger memory|directory|postgres]`. The reference server is installed
 * under .data/npm/ on first use.
 *
 * @module
 */
import { benchArgs } from "./support/args.ts";
import { quantileTenth } from "./support/quantile.ts";
import { findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { ingestBase, startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  records: { type: "string", default: "20000" },
  live: { type: "string", default: "500" },
  rate: { type: "string", default: "200" },
  ledger: { type: "string", default: "memory" },
  rounds: { type: "string", default: "2" },
});
const RECORDS = Number(values.records);
const LIVE = Number(values.live);
const RATE = Number(values.rate);
const ROUNDS = Number(values.rounds);
const NPM_DIR = new URL("../.data/npm/durable-streams-server/", import.meta.url).pathname;
const REFERENCE = { "@durable-streams/server": "0.3.7" };

interface Server {
  readonly name: string;
  readonly base: string;
  stop(): Promise<void>;
}

async function portOf(child: Deno.ChildProcess, pattern: RegExp): Promise<number> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`Server ended before listening:\n${text}`);
    text += value;
    const match = pattern.exec(text);
    if (match) {
      // Keep draining, so the child never blocks on a full pipe.
      (async () => {
        while (!(await reader.read()).done);
      })();
      return Number(match[1]);
    }
  }
}

async function startFunnel(ledger: string): Promise<Server> {
  let uri = "";
  let dir: string | undefined;
  if (ledger === "directory") uri = `file://${dir = await Deno.makeTempDir()}`;
  if (ledger === "postgres") uri = `${await findPostgres()}?table=${freshTableName()}`;
  const funnel = await startServer("funnel", {
    env: { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none", LEDGER_URI: uri },
  });
  return {
    name: `sluice funnel (${ledger})`,
    base: ingestBase(funnel),
    async stop() {
      await funnel.stop();
      if (dir) await Deno.remove(dir, { recursive: true });
    },
  };
}

async function startReference(): Promise<Server> {
  const pkg = JSON.stringify({ private: true, type: "module", dependencies: REFERENCE });
  if ((await Deno.readTextFile(`${NPM_DIR}package.json`).catch(() => "")) !== pkg) {
    await Deno.mkdir(NPM_DIR, { recursive: true });
    await Deno.writeTextFile(`${NPM_DIR}package.json`, pkg);
    const out = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund"],
      cwd: NPM_DIR,
    }).output();
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  }
  await Deno.writeTextFile(
    `${NPM_DIR}server.mjs`,
    `import { DurableStreamTestServer } from "@durable-streams/server";\n` +
      `const s = new DurableStreamTestServer({ port: 0, host: "127.0.0.1" });\n` +
      `console.log("listening " + new URL(await s.start()).port);\n`,
  );
  const child = new Deno.Command("node", {
    args: ["server.mjs"],
    cwd: NPM_DIR,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const port = await portOf(child, /listening (\d+)/);
  return {
    name: "reference server (memory)",
    base: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

const JSON_TYPE = { "content-type": "application/json" };

async function append(url: string, body: string): Promise<void> {
  const response = await fetch(url, { method: "POST", headers: JSON_TYPE, body });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`POST ${url}: ${response.status}`);
}

/** Writes RECORDS appends, then times a catch-up read of all of them. */
async function catchUp(server: Server, round: number): Promise<number> {
  const url = `${server.base}/v1/stream/bench-catchup-${round}-${Date.now()}`;
  await (await fetch(url, { method: "PUT", headers: JSON_TYPE })).body?.cancel();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < RECORDS) {
      const n = next++;
      await append(url, JSON.stringify({ text: `message number ${n}, about chat-sized`, n }));
    }
  }));
  const started = performance.now();
  let offset = "-1";
  let read = 0;
  for (;;) {
    const response = await fetch(`${url}?offset=${encodeURIComponent(offset)}`);
    read += (await response.json() as unknown[]).length;
    offset = response.headers.get("stream-next-offset")!;
    if (response.headers.get("stream-up-to-date") === "true") break;
  }
  const seconds = (performance.now() - started) / 1000;
  if (read !== RECORDS) throw new Error(`${server.name}: read ${read} of ${RECORDS}`);
  return RECORDS / seconds;
}

/** POSTs LIVE appends at RATE/s while one SSE reader follows; latencies in ms. */
async function live(server: Server, round: number): Promise<number[]> {
  const url = `${server.base}/v1/stream/bench-live-${round}-${Date.now()}`;
  await (await fetch(url, { method: "PUT", headers: JSON_TYPE })).body?.cancel();
  const sent = new Map<number, number>();
  const latencies: number[] = [];
  const abort = new AbortController();
  const sse = await fetch(`${url}?offset=now&live=sse`, { signal: abort.signal });
  const reading = (async () => {
    const reader = sse.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    while (latencies.length < LIVE) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!event.startsWith("event: data")) continue;
        const data = event.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5)).join("\n");
        const now = performance.now();
        for (const m of JSON.parse(data) as { n: number }[]) {
          latencies.push(now - sent.get(m.n)!);
        }
      }
    }
  })();
  const interval = 1000 / RATE;
  const start = performance.now();
  for (let n = 0; n < LIVE; n++) {
    const due = start + n * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent.set(n, performance.now());
    void append(url, JSON.stringify({ n }));
  }
  await Promise.race([reading, new Promise((r) => setTimeout(r, 10_000))]);
  abort.abort();
  await reading.catch(() => {});
  return latencies.sort((a, b) => a - b);
}

const servers: Array<() => Promise<Server>> = [
  () => startFunnel(values.ledger),
  startReference,
];
console.log(
  `${RECORDS} catch-up records, ${LIVE} live records at ${RATE}/s, ${ROUNDS} rounds, interleaved`,
);
const rows = new Map<string, { catchUp: number[]; live: number[][] }>();
for (let round = 0; round < ROUNDS; round++) {
  for (const start of servers) {
    const server = await start();
    try {
      const row = rows.get(server.name) ?? { catchUp: [], live: [] };
      rows.set(server.name, row);
      row.catchUp.push(await catchUp(server, round));
      row.live.push(await live(server, round));
    } finally {
      await server.stop();
    }
  }
}
console.log(
  "| server | catch-up records/s (per round) | POST → SSE p50 / p99 / max ms (per round) | delivered |",
);
console.log("| --- | --- | --- | --- |");
for (const [name, row] of rows) {
  const rates = row.catchUp.map((r) => Math.round(r).toLocaleString("en")).join(", ");
  const lat = row.live.map((l) =>
    `${quantileTenth(l, 0.5)} / ${quantileTenth(l, 0.99)} / ${quantileTenth(l, 1)}`
  ).join("; ");
  const delivered = row.live.map((l) => `${l.length}/${LIVE}`).join(", ");
  console.log(`| ${name} | ${rates} | ${lat} | ${delivered} |`);
}
