// The same subscribers served by one relay process, then split across two
// meshed relay processes (the second dials the first; the publisher is on the
// first), on this machine: groups per second delivered, delivery latency and
// loss. Subscribers run in two load-generator workers (bench/support/loadgen/worker.ts)
// on the same cores as the relays.
//
//   deno run -A bench/mesh_fanout.ts [--subscribers 400] [--rate 30] [--size 1200] [--seconds 10]
//     [--ramp SESSIONS_PER_S] [--concurrency C] [--only one,two]
//
// Each relay's RSS (and per session held on it) and CPU over the window are printed too: the
// sessions one relay holds when a second one on the same machine takes half of them.
import { benchArgs } from "./support/args.ts";
import { TrackProducer } from "../src/moq/mod.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { type FromWorker, wallNow } from "./support/loadgen/protocol.ts";
import { benchMesh, type BenchRelay, waitFor } from "./support/relay_processes.ts";
import { sleep } from "../src/timers/mod.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks, rssMib } from "./support/loadgen/proc_stats.ts";

const { values } = benchArgs({
  subscribers: { type: "string", default: "400" },
  rate: { type: "string", default: "30" },
  size: { type: "string", default: "1200" },
  seconds: { type: "string", default: "10" },
  ramp: { type: "string", default: "0" },
  concurrency: { type: "string", default: "8" },
  only: { type: "string", default: "one,two" },
});
const subscribers = Number(values.subscribers);
const rate = Number(values.rate);
const size = Math.max(8, Number(values.size));
const seconds = Number(values.seconds);
const ramp = Number(values.ramp);
const concurrency = Number(values.concurrency);
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
  /** Per relay: RSS at the end of the window (MiB, and KiB per session it held), CPU % of a core. */
  relays: { rss: number; perSession: number; cpu: number }[];
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
      serve: (r) => (r.path === PATH && r.track === "t" ? track : "not_found"),
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
    const baseRss = [first, ...(second ? [second] : [])].map((r) => rssMib(r.child.pid));
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
        concurrency,
        rampPerSecond: ramp / 2,
        raw: false,
        udpReceiveBuffer: true,
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
    const relays = second ? [first, second] : [first];
    const cpu0 = relays.map((r) => cpuTicks(r.child.pid));
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = relays.map((r, i) =>
      Math.round((cpuTicks(r.child.pid) - cpu0[i]!) / CLOCK_TICKS_PER_SECOND / elapsed * 1000) / 10
    );
    const rss = relays.map((r) => rssMib(r.child.pid));
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
    const base = (await Promise.resolve(baseRss)).slice(0, relays.length);
    const heldOn = relays.length === 1 ? [held()] : [0, 1].map((i) => {
      const last = reports[i]!.findLast((m) => m.type === "report");
      return last && last.type === "report" ? last.held : 0;
    });
    return {
      layout,
      held: held(),
      failed: count("failed"),
      groupsPerSecond: Math.round(groups / seconds),
      expectedPerSecond: rate * subscribers,
      loss: due > 0 ? 1 - received / due : NaN,
      p50: latency.quantile(0.5),
      p99: latency.quantile(0.99),
      relays: relays.map((_, i) => ({
        rss: Math.round(rss[i]!),
        perSession: Math.round((rss[i]! - base[i]!) * 1024 / Math.max(1, heldOn[i]!)),
        cpu: cpu[i]!,
      })),
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
const layouts = (["one relay", "two meshed relays"] as const).filter((l) =>
  values.only.split(",").includes(l.startsWith("one") ? "one" : "two")
);
for (const layout of layouts) {
  const r = await run(layout);
  console.log(
    `${
      r.layout.padEnd(18)
    } held ${r.held} (${r.failed} failed), delivered ${r.groupsPerSecond} groups/s of ` +
      `${r.expectedPerSecond} due, loss ${(r.loss * 100).toFixed(1)}%, ` +
      `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms; ` +
      r.relays.map((x, i) =>
        `relay ${i + 1}: RSS ${x.rss} MiB (${x.perSession} KiB per session), CPU ${x.cpu}%`
      ).join("; ") +
      `; load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
  );
}
