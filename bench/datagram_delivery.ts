// Datagram delivery against stream delivery, in one run on this machine.
//
// First the ceiling: how many QUIC datagrams per second one Deno connection
// sends to another here, and how many arrive. Then, for each offered rate, a
// relay process (RELAY_DATAGRAM_TRACKS=bench/dgram) fans one publisher's
// small single-frame groups out to N subscriber sessions held by a
// load-generator worker (bench/support/loadgen/worker.ts), once on a stream track and
// once on a datagram track: groups per second delivered, share lost (never
// delivered; a feed would repair these from the ledger), p50/p99 latency, and
// what the relay counted.
//
//   deno run -A bench/datagram_delivery.ts [--subscribers 20] [--rates 100,500,1500]
//     [--size 100] [--seconds 5] [--raw-seconds 2]
import { benchArgs } from "./support/args.ts";
import { TrackProducer } from "../src/moq/mod.ts";
import { connectQuicSession, listenQuic } from "../src/transport/mod.ts";
import { generateDevCertificate } from "../src/certs/mod.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks } from "./support/loadgen/proc_stats.ts";
import { type FromWorker, wallNow } from "./support/loadgen/protocol.ts";
import { benchMesh, waitFor } from "./support/relay_processes.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  subscribers: { type: "string", default: "20" },
  rates: { type: "string", default: "100,500,1500" },
  size: { type: "string", default: "100" },
  seconds: { type: "string", default: "5" },
  "raw-seconds": { type: "string", default: "2" },
});
const subscribers = Number(values.subscribers);
const rates = values.rates.split(",").map(Number);
const size = Math.max(8, Number(values.size));
const seconds = Number(values.seconds);
const rawSeconds = Number(values["raw-seconds"]);
const PATH = "bench/fanout";

/** Datagrams one connection sends to another in `ms`, and how many arrive. */
async function rawCeiling(ms: number): Promise<{ sent: number; received: number }> {
  const cert = await generateDevCertificate();
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: ["bench"] });
  const accepted = listener[Symbol.asyncIterator]().next();
  const client = await connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
    alpn: ["bench"],
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
  const server = (await accepted).value!;
  let received = 0;
  const reading = (async () => {
    while (await server.readDatagram!()) received++;
  })();
  const payload = new Uint8Array(size + 8);
  let sent = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    for (let i = 0; i < 256; i++) await client.sendDatagram!(payload);
    sent += 256;
  }
  await sleep(200); // the last ones in flight
  const got = received;
  client.close(0, "");
  server.close(0, "");
  await reading;
  listener.stop();
  return { sent: sent / (ms / 1000), received: got / (ms / 1000) };
}

interface Result {
  mode: "stream" | "datagram";
  rate: number;
  held: number;
  groupsPerSecond: number;
  due: number;
  loss: number;
  p50: number;
  p99: number;
  cpuPerKilo: number;
  datagrams: number;
  repeats: number;
}

function metric(text: string, name: string): number {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, "m"));
  return m ? Number(m[1]) : 0;
}

type Report = FromWorker & { type: "report" };

async function run(mode: "stream" | "datagram", rate: number): Promise<Result> {
  const mesh = await benchMesh();
  const workers: Worker[] = [];
  try {
    const relay = await mesh.relay("datagram-bench", [], {
      RELAY_DATAGRAM_TRACKS: `${PATH}/dgram`,
      GROUP_CACHE_SIZE: "256",
    });
    const pid = relay.process.serverPid();
    const trackName = mode === "datagram" ? "dgram" : "stream";
    const track = new TrackProducer({ cache: 256 });
    const publisher = await relay.dial({
      serve: (r) => (r.path === PATH && r.track === trackName ? track : "not_found"),
    });
    publisher.announce(PATH);
    let seq = 0;
    const send = () => {
      const payload = new Uint8Array(size);
      new DataView(payload.buffer).setFloat64(0, wallNow());
      track.writeGroup(++seq, payload);
    };
    let timer = setInterval(send, 100);
    // Two workers, half the subscribers each, so the receiving side has a thread per core.
    const reports: Report[][] = [[], []];
    for (const [i, n] of [Math.ceil(subscribers / 2), Math.floor(subscribers / 2)].entries()) {
      const w = new Worker(new URL("./support/loadgen/worker.ts", import.meta.url), {
        type: "module",
      });
      w.onmessage = (e: MessageEvent<FromWorker>) => {
        if (e.data.type === "report") reports[i]!.push(e.data);
      };
      w.postMessage({
        type: "start",
        url: `moqt://localhost:${relay.port}/`,
        certSha256: mesh.cert.sha256,
        certPem: mesh.cert.certPem,
        sessions: n,
        concurrency: 8,
        path: PATH,
        track: trackName,
        transport: "quic",
      });
      workers.push(w);
    }
    const sum = (f: (r: Report) => number) =>
      reports.reduce((s, r) => s + (r.length > 0 ? f(r.at(-1)!) : 0), 0);
    await waitFor(
      () => sum((r) => r.held + r.failed) >= subscribers,
      `${subscribers} subscribers`,
      120_000,
    );
    clearInterval(timer);
    // setInterval cannot fire more than about once a millisecond: write batches.
    const perTick = Math.max(1, Math.round(rate / 200));
    timer = setInterval(() => {
      for (let i = 0; i < perTick; i++) send();
    }, (1000 * perTick) / rate);
    await sleep(1500); // settle
    const before = await relay.metrics();
    const from = seq + 1;
    for (const w of workers) w.postMessage({ type: "window", from, to: undefined });
    const marks = reports.map((r) => r.length);
    const cpu0 = cpuTicks(pid);
    const started = performance.now();
    await sleep(seconds * 1000);
    const to = seq;
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuTicks(pid) - cpu0;
    for (const w of workers) w.postMessage({ type: "window", from, to });
    await sleep(1500); // late groups of the window
    clearInterval(timer);
    // A fresh report from each worker, so the counts include the window's last groups.
    const counts = reports.map((r) => r.length);
    await waitFor(() => reports.every((r, i) => r.length > counts[i]!), "fresh reports", 30_000);
    const after = await relay.metrics();
    const latency = new LatencyHistogram();
    for (const [i, r] of reports.entries()) {
      for (const m of r.slice(marks[i])) latency.merge(m.latency);
    }
    const received = sum((r) => r.windowReceived);
    const sessions = sum((r) => r.windowSessions);
    const written = to - from + 1;
    const due = written * sessions;
    publisher.close();
    const diff = (name: string) => metric(after, name) - metric(before, name);
    return {
      mode,
      rate: Math.round(written / elapsed),
      held: sum((r) => r.held),
      groupsPerSecond: Math.round(received / elapsed),
      due: Math.round(due / elapsed),
      loss: due > 0 ? 1 - received / due : NaN,
      p50: latency.quantile(0.5),
      p99: latency.quantile(0.99),
      // Relay CPU per 1000 groups it delivered in the window, ms.
      cpuPerKilo: received > 0 ? ((cpu / CLOCK_TICKS_PER_SECOND) * 1000) / (received / 1000) : NaN,
      datagrams: diff("sluice_relay_datagram_groups_total"),
      repeats: diff("sluice_relay_datagram_tail_repeats_total"),
    };
  } finally {
    for (const w of workers) w.postMessage({ type: "stop" });
    await sleep(500);
    for (const w of workers) w.terminate();
    await mesh.close();
  }
}

console.log(
  `datagram vs stream delivery: ${subscribers} subscribers (native QUIC), ${size} B groups, ` +
    `${seconds} s window; load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
);
const raw = await rawCeiling(rawSeconds * 1000);
console.log(
  `ceiling: one QUIC connection sends ${Math.round(raw.sent)} datagrams/s of ${size + 8} B ` +
    `here, ${Math.round(raw.received)}/s arrive`,
);
for (const rate of rates) {
  for (const mode of ["stream", "datagram"] as const) {
    const r = await run(mode, rate);
    console.log(
      `${mode.padEnd(8)} offered ${String(r.rate).padStart(5)} groups/s × ${r.held}: ` +
        `delivered ${r.groupsPerSecond} of ${r.due} groups/s due ` +
        `(${
          ((r.groupsPerSecond / raw.received) * 100).toFixed(1)
        }% of the raw datagram ceiling), ` +
        `lost ${(r.loss * 100).toFixed(2)}%, p50 ${r.p50.toFixed(1)} ms, p99 ${
          r.p99.toFixed(1)
        } ms, ` +
        `relay CPU ${r.cpuPerKilo.toFixed(1)} ms per 1000 groups` +
        (mode === "datagram"
          ? `; relay sent ${r.datagrams} datagrams, ${r.repeats} tail repeats`
          : ""),
    );
  }
}
