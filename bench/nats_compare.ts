/**
 * sluice next to nats-server, same sizes, same run, same machine:
 *
 * - fan-out: one publisher at `--rate` messages/s of `--size` B to `--n` subscriber connections;
 *   nats-server (core NATS, TCP), `sluice relay` (moq-lite over QUIC, credentials on) and the
 *   raw baseline (a bare Deno QUIC server, one uni stream per message per connection), the last
 *   two through the load generator. Delivery latency p50/p99 and server CPU per delivered copy.
 * - acknowledged ingest: `--connections` publishers for `--seconds`, each with one message in
 *   flight waiting for its acknowledgement; JetStream (file storage) publish acknowledgements
 *   next to the funnel's 201 for a POST (auth on, its default ledger). Acks/s, ack latency p50,
 *   server CPU per ack.
 *
 * Needs a nats-server with JetStream at 127.0.0.1:4222 (skips the NATS rows otherwise).
 *
 *   deno run -A bench/nats_compare.ts [--n 100] [--rate 100] [--size 100] [--seconds 10]
 *     [--connections 16] [--only fanout,ingest]
 */
import { benchArgs } from "./support/args.ts";
import { writeBenchPoster } from "./support/key_set.ts";
import { sleep } from "../src/timers/mod.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { loadgen } from "./support/loadgen/mod.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks } from "./support/loadgen/proc_stats.ts";
import { wallNow } from "./support/loadgen/protocol.ts";
import { NatsConnection, natsServerPid } from "./support/nats_client.ts";
import { postLoad } from "./support/post_load.ts";
import { ingestBase, startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  n: { type: "string", default: "100" },
  rate: { type: "string", default: "100" },
  size: { type: "string", default: "100" },
  seconds: { type: "string", default: "10" },
  connections: { type: "string", default: "16" },
  only: { type: "string", default: "fanout,ingest" },
});
const n = Number(values.n);
const rate = Number(values.rate);
const size = Math.max(16, Number(values.size));
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const only = values.only.split(",");

interface Row {
  name: string;
  p50: number;
  p99: number;
  /** Server CPU per unit (delivered copy, or ack), µs. */
  serverUs: number;
  /** The measuring client's CPU per unit, µs. */
  clientUs: number;
  /** Units per second (deliveries or acks). */
  perSecond: number;
}

const load = () => Deno.loadavg().map((l) => l.toFixed(2)).join(" ");
const us = (ticks: number, units: number) =>
  units > 0 ? (ticks / CLOCK_TICKS_PER_SECOND) * 1e6 / units : NaN;

/** Waits out the measured window: the server's and this process's CPU ticks over it, and its length in s. */
async function measuredWindow(
  pid: number,
): Promise<{ server: number; own: number; elapsed: number }> {
  const server0 = cpuTicks(pid);
  const own0 = cpuTicks(Deno.pid);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  return {
    server: cpuTicks(pid) - server0,
    own: cpuTicks(Deno.pid) - own0,
    elapsed: (performance.now() - t0) / 1000,
  };
}

async function natsFanout(pid: number): Promise<Row> {
  const subject = `sluice.bench.${crypto.randomUUID().slice(0, 8)}`;
  const latency = new LatencyHistogram();
  let delivered = 0;
  let measuring = false;
  const subs = await Promise.all(Array.from({ length: n }, () => NatsConnection.connect()));
  for (const s of subs) {
    s.subscribe(subject, (m) => {
      if (!measuring) return;
      delivered++;
      latency.record(wallNow() - new DataView(m.payload.buffer).getFloat64(0));
    });
  }
  await Promise.all(subs.map((s) => s.ping()));
  const pub = await NatsConnection.connect();
  const payload = new Uint8Array(size);
  let sent = 0;
  const started = performance.now();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due) {
      sent++;
      const p = payload.slice();
      new DataView(p.buffer).setFloat64(0, wallNow());
      pub.publish(subject, p);
    }
  }, Math.max(1, Math.min(50, 1000 / rate / 2)));
  await sleep(2000); // warm up
  measuring = true;
  const { server, own, elapsed } = await measuredWindow(pid);
  const count = delivered;
  measuring = false;
  clearInterval(timer);
  pub.close();
  for (const s of subs) s.close();
  return {
    name: "nats-server fan-out",
    p50: latency.quantile(0.5),
    p99: latency.quantile(0.99),
    serverUs: us(server, count),
    clientUs: us(own, count),
    perSecond: count / elapsed,
  };
}

async function sluiceFanout(target: "relay" | "raw"): Promise<Row> {
  const r = await loadgen({
    subscribers: n,
    rate,
    size,
    duration: seconds,
    workers: 1,
    concurrency: 16,
    ramp: 0,
    profile: undefined,
    heap: undefined,
    profilePhase: "ramp",
    profileSeconds: 10,
    transport: "quic",
    target,
    relayEnv: {},
    settle: 2,
    rampTimeout: 30,
    rampLimit: 0,
    json: false,
    clientHostBuffer: false,
    auth: target === "relay",
  }, () => {});
  return {
    name: target === "relay" ? "sluice relay fan-out" : "raw Deno QUIC fan-out",
    p50: r.latency_ms.p50,
    p99: r.latency_ms.p99,
    serverUs: r.cpu.relay_us_per_delivered,
    clientUs: r.cpu.client_us_per_delivered,
    perSecond: r.latency_ms.samples / r.duration_s,
  };
}

async function jetStreamIngest(pid: number): Promise<Row> {
  const nats = await NatsConnection.connect();
  const stream = `SLUICEBENCH${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  const subject = `sluicebench.${stream}`;
  const enc = new TextEncoder();
  await nats.request(
    `$JS.API.STREAM.CREATE.${stream}`,
    enc.encode(JSON.stringify({ name: stream, subjects: [subject], storage: "file" })),
  );
  const body = enc.encode('{"kind":"reaction","emoji":"👍","at":1234567890}');
  const latency = new LatencyHistogram();
  let acks = 0;
  let measuring = false;
  let running = true;
  const publishers = Array.from({ length: connections }, async () => {
    const c = await NatsConnection.connect();
    while (running) {
      const t = performance.now();
      const ack = await c.request(subject, body);
      if (new TextDecoder().decode(ack.payload).includes('"error"')) throw new Error("nack");
      if (measuring) {
        acks++;
        latency.record(performance.now() - t);
      }
    }
    c.close();
  });
  await sleep(1000);
  measuring = true;
  const { server, own, elapsed } = await measuredWindow(pid);
  const count = acks;
  measuring = false;
  running = false;
  await Promise.all(publishers);
  await nats.request(`$JS.API.STREAM.DELETE.${stream}`, new Uint8Array());
  nats.close();
  return {
    name: "JetStream publish ack",
    p50: latency.quantile(0.5),
    p99: latency.quantile(0.99),
    serverUs: us(server, count),
    clientUs: us(own, count),
    perSecond: count / elapsed,
  };
}

async function funnelIngest(): Promise<Row> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-nats-compare-" });
  try {
    const { keysFile, token } = await writeBenchPoster(dir);
    const funnel = await startServer("funnel", {
      env: {
        FUNNEL_ADDR: "127.0.0.1:0",
        FUNNEL_SERVE_ADDR: "none",
        SLUICE_AUTH_KEYS: keysFile,
      },
      clearEnv: true,
    });
    const server = {
      port: Number(new URL(ingestBase(funnel)).port),
      pid: funnel.pid,
      stop: () => funnel.stop(),
    };
    try {
      const post = (secs: number) =>
        postLoad({
          port: server.port,
          path: "/tracks/bench/room/chat",
          body: '{"kind":"reaction","emoji":"👍","at":1234567890}',
          headers: { authorization: `Bearer ${token}` },
          connections,
          seconds: secs,
        });
      await post(1); // warm up
      const server0 = cpuTicks(server.pid);
      const own0 = cpuTicks(Deno.pid);
      const r = await post(seconds);
      const serverTicks = cpuTicks(server.pid) - server0;
      const own = cpuTicks(Deno.pid) - own0;
      return {
        name: "funnel POST 201",
        p50: r.p50Ms,
        p99: r.p99Ms,
        serverUs: us(serverTicks, r.requests),
        clientUs: us(own, r.requests),
        perSecond: r.perSecond,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function print(rows: Row[]): void {
  for (const r of rows) {
    console.log(
      `  ${r.name.padEnd(24)} ${r.perSecond.toFixed(0).padStart(7)}/s  p50 ${
        r.p50.toFixed(1).padStart(6)
      } ms  p99 ${r.p99.toFixed(1).padStart(7)} ms  server ${
        r.serverUs.toFixed(1).padStart(6)
      } µs  client ${r.clientUs.toFixed(1).padStart(6)} µs`,
    );
  }
}

const pid = natsServerPid();
if (pid === undefined) console.log("SKIP the NATS rows: no nats-server process on this host");
if (only.includes("fanout")) {
  console.log(
    `fan-out to ${n} subscribers, ${rate} msg/s of ${size} B, ${seconds} s (load average ${load()})`,
  );
  const rows: Row[] = [];
  if (pid !== undefined) rows.push(await natsFanout(pid));
  rows.push(await sluiceFanout("relay"));
  rows.push(await sluiceFanout("raw"));
  print(rows);
  const [relay, raw] = rows.slice(-2) as [Row, Row];
  const nats = pid !== undefined ? rows[0] : undefined;
  console.log(
    `  relay / raw: server CPU per copy ${(relay.serverUs / raw.serverUs).toFixed(2)}x, ` +
      `client ${(relay.clientUs / raw.clientUs).toFixed(2)}x` +
      (nats
        ? `; relay / nats-server: server CPU per copy ${
          (relay.serverUs / nats.serverUs).toFixed(2)
        }x, p50 ${(relay.p50 / nats.p50).toFixed(2)}x`
        : ""),
  );
}
if (only.includes("ingest")) {
  console.log(
    `acknowledged ingest, ${connections} publishers with one message in flight each, ${seconds} s (load average ${load()})`,
  );
  const rows: Row[] = [];
  if (pid !== undefined) rows.push(await jetStreamIngest(pid));
  rows.push(await funnelIngest());
  print(rows);
  if (pid !== undefined) {
    const [js, funnel] = rows as [Row, Row];
    console.log(
      `  funnel / JetStream: acks/s ${(funnel.perSecond / js.perSecond).toFixed(2)}x, ` +
        `server CPU per ack ${(funnel.serverUs / js.serverUs).toFixed(2)}x`,
    );
  }
}
