// The same subscribers served by one relay process, then split across two
// meshed relay processes (the second dials the first; the publisher is on the
// first), on this machine: groups per second delivered, delivery latency and
// loss. Subscribers run in two load-generator workers (bench/support/loadgen/worker.ts)
// on the same cores as the relays.
//
//   deno run -A bench/mesh_fanout.ts [--subscribers 400] [--rate 30] [--size 1200] [--seconds 10]
import { benchArgs } from "./support/args.ts";
import { TrackProducer } from "../src/moq/mod.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { type FromWorker, wallNow } from "./support/loadgen/protocol.ts";
import { benchMesh, type BenchRelay, waitFor } from "./support/relay_processes.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  subscribers: { type: "string", default: "400" },
  rate: { type: "string", default: "30" },
  size: { type: "string", default: "1200" },
  seconds: { type: "string", default: "10" },
});
const subscribers = Number(values.subscribers);
const rate = Number(values.rate);
const size = Math.max(8, Number(values.size));
const seconds = Number(values.seconds);
const PATH = "bench/fanout";

interface Result {
  layout: string;
  held: number;
  failed: number;
  groupsPerSecond: number;
  expectedPerSecond: number;
  loss: number;
  p50: number;
  p99: number;
}

async function run(layout: "one relay" | "two meshed relays"): Promise<Result> {
  const mesh = await benchMesh();
  const workers: Worker[] = [];
  try {
    const first = await mesh.relay("fanout-1");
    const second = layout === "two meshed relays"
      ? await mesh.relay("fanout-2", [first.port])
      : undefined;
    const track = new TrackProducer({ cache: 8 });
    const publisher = await first.dial({
      serve: (r) => (r.path === PATH && r.track === "t" ? track : "not-found"),
    });
    publisher.announce(PATH);
    let seq = 0;
    const send = () => {
      const payload = new Uint8Array(size);
      new DataView(payload.buffer).setFloat64(0, wallNow());
      track.writeGroup(++seq, payload);
    };
    // One group a second while subscribers connect (each new one starts at the latest), the full
    // rate once all are set up.
    let timer = setInterval(send, 1000);
    if (second) {
      await waitFor(
        async () => (await second.metrics()).includes("broadcasts_active 1"),
        "the mesh",
      );
    }
    // Half the subscribers in each worker; with two relays each worker has its own relay.
    const targets: BenchRelay[] = [first, second ?? first];
    const reports: FromWorker[][] = [[], []];
    for (const [i, target] of targets.entries()) {
      const w = new Worker(new URL("./support/loadgen/worker.ts", import.meta.url), {
        type: "module",
      });
      w.onmessage = (e: MessageEvent<FromWorker>) => reports[i]!.push(e.data);
      w.postMessage({
        type: "start",
        url: `moqt://localhost:${target.port}/`,
        certSha256: mesh.cert.sha256,
        sessions: subscribers / 2,
        concurrency: 8,
        path: PATH,
        track: "t",
        transport: "quic",
      });
      workers.push(w);
    }
    const count = (field: "held" | "failed") =>
      reports.reduce((s, r) => {
        const last = r.findLast((m) => m.type === "report");
        return s + (last && last.type === "report" ? last[field] : 0);
      }, 0);
    const held = () => count("held");
    await waitFor(
      () => held() + count("failed") >= subscribers,
      `${subscribers} subscribers to be set up`,
      300_000,
    );
    clearInterval(timer);
    timer = setInterval(send, 1000 / rate);
    await sleep(2000); // settle
    const from = seq + 1;
    for (const w of workers) w.postMessage({ type: "window", from, to: undefined });
    const marks = reports.map((r) => r.length);
    await sleep(seconds * 1000);
    const to = seq;
    for (const w of workers) w.postMessage({ type: "window", from, to });
    await sleep(1500); // late groups of the window
    clearInterval(timer);
    const latency = new LatencyHistogram();
    let received = 0;
    let sessions = 0;
    let groups = 0;
    for (const [i, r] of reports.entries()) {
      const window = r.slice(marks[i]!);
      for (const m of window) {
        if (m.type !== "report") continue;
        latency.merge(m.latency);
      }
      // Groups per second over the measurement window (reports are per second).
      for (const m of window.slice(0, seconds)) if (m.type === "report") groups += m.groups;
      const last = r.findLast((m) => m.type === "report");
      if (last && last.type === "report") {
        received += last.windowReceived;
        sessions += last.windowSessions;
      }
    }
    const due = (to - from + 1) * sessions;
    publisher.close();
    return {
      layout,
      held: held(),
      failed: count("failed"),
      groupsPerSecond: Math.round(groups / seconds),
      expectedPerSecond: rate * subscribers,
      loss: due > 0 ? 1 - received / due : NaN,
      p50: latency.quantile(0.5),
      p99: latency.quantile(0.99),
    };
  } finally {
    for (const w of workers) {
      w.postMessage({ type: "stop" });
    }
    await sleep(500);
    for (const w of workers) w.terminate();
    await mesh.close();
  }
}

console.log(
  `${subscribers} subscribers, ${rate} groups/s of ${size} B, ${seconds} s window, ` +
    `load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
);
for (const layout of ["one relay", "two meshed relays"] as const) {
  const r = await run(layout);
  console.log(
    `${
      r.layout.padEnd(18)
    } held ${r.held} (${r.failed} failed), delivered ${r.groupsPerSecond} groups/s of ` +
      `${r.expectedPerSecond} due, loss ${(r.loss * 100).toFixed(1)}%, ` +
      `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`,
  );
}
