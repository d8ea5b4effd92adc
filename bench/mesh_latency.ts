// Latency through chains of relay processes of depth 1, 3, 5 and 8, in one
// run: one chain of eight relays (relay i dials relay i-1), the publisher on
// relay 1, one subscriber on relay 1, 3, 5 and 8. Each group carries its send
// time; the subscriber records the delivery latency. The cost per hop is the
// slope of the medians over the number of relays.
//
//   deno run -A bench/mesh_latency.ts [--rate 50] [--seconds 10] [--size 100]
import { benchArgs } from "./support/args.ts";
import { TrackProducer } from "../src/moq/mod.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { sentAt, wallNow } from "./support/loadgen/protocol.ts";
import { benchMesh, type BenchRelay, waitFor } from "./support/relay_processes.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  rate: { type: "string", default: "50" },
  seconds: { type: "string", default: "10" },
  size: { type: "string", default: "100" },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const size = Math.max(8, Number(values.size));
const DEPTHS = [1, 3, 5, 8];

const mesh = await benchMesh();
try {
  const chain: BenchRelay[] = [];
  for (let i = 1; i <= 8; i++) {
    chain.push(await mesh.relay(`chain-${i}`, i === 1 ? [] : [chain[i - 2]!.port]));
  }
  const track = new TrackProducer({ cache: 8 });
  const publisher = await chain[0]!.dial({
    serve: (r) => (r.path === "bench/chain" && r.track === "t" ? track : "not_found"),
  });
  publisher.announce("bench/chain");
  const histograms = new Map(DEPTHS.map((d) => [d, new LatencyHistogram()]));
  let measuring = false;
  const subscribers = await Promise.all(DEPTHS.map(async (depth) => {
    const moq = await chain[depth - 1]!.dial();
    await waitFor(async () => {
      for await (const e of moq.announced("bench", { signal: AbortSignal.timeout(200) })) {
        if (e.path === "bench/chain" && e.active) return true;
      }
      return false;
    }, `the broadcast at depth ${depth}`);
    const sub = moq.subscribe("bench/chain", "t");
    await sub.ready;
    const reading = (async () => {
      for await (const g of sub) {
        if (measuring) histograms.get(depth)!.record(wallNow() - sentAt(g.frames[0]!));
      }
    })();
    return { moq, sub, reading };
  }));
  let seq = 0;
  const send = () => {
    const payload = new Uint8Array(size);
    new DataView(payload.buffer).setFloat64(0, wallNow());
    track.writeGroup(++seq, payload);
  };
  const timer = setInterval(send, 1000 / rate);
  await sleep(2000); // warm-up: the chain subscribes, JIT settles
  measuring = true;
  await sleep(seconds * 1000);
  measuring = false;
  clearInterval(timer);
  const rows = DEPTHS.map((d) => {
    const h = histograms.get(d)!;
    return {
      depth: d,
      p50: h.quantile(0.5),
      p90: h.quantile(0.9),
      p99: h.quantile(0.99),
      n: h.total,
    };
  });
  // Least-squares slope of the medians over the number of relays.
  const mx = rows.reduce((s, r) => s + r.depth, 0) / rows.length;
  const my = rows.reduce((s, r) => s + r.p50, 0) / rows.length;
  const slope = rows.reduce((s, r) => s + (r.depth - mx) * (r.p50 - my), 0) /
    rows.reduce((s, r) => s + (r.depth - mx) ** 2, 0);
  console.log(`groups: ${rate}/s of ${size} B for ${seconds} s; latency in ms (0.1 ms resolution)`);
  console.log("relays  p50    p90    p99    samples");
  for (const r of rows) {
    console.log(
      `${String(r.depth).padStart(6)}  ${r.p50.toFixed(1).padStart(5)}  ${
        r.p90.toFixed(1).padStart(5)
      }  ${r.p99.toFixed(1).padStart(5)}  ${r.n}`,
    );
  }
  const oneToEight = (rows.at(-1)!.p50 - rows[0]!.p50) / (rows.at(-1)!.depth - rows[0]!.depth);
  console.log(
    `per hop: ${slope.toFixed(2)} ms (slope of p50), ${
      oneToEight.toFixed(2)
    } ms ((p50@8 - p50@1) / 7)`,
  );
  for (const s of subscribers) {
    s.sub.close();
    s.moq.close();
  }
  publisher.close();
} finally {
  await mesh.close();
}
