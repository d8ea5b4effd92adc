// Delivery latency over lossy links: `deno run -A bench/lossy_link.ts [--records N]
// [--rate R] [--loss 0.05] [--delay 50] [--seed N] [--json]`. A funnel and a relay
// in this process, the links between them and to the subscriber shaped by the
// userspace UDP proxy (loss and one-way delay each way, 2% reordered). One sender
// posts N records at R per second; a subscriber reads them. Reports, per path,
// records lost (must be 0) and the latency from the POST's 201 to the
// subscriber's receipt: p50, p90, p99 and max.
import { benchArgs } from "./support/args.ts";
import type { Subscription } from "../src/moq/mod.ts";
import { startTestRelay } from "../tests/support/test_relay.ts";
import { testCertificateFiles } from "../tests/support/certs.ts";
import { dialOurs, seeAnnounced } from "../tests/support/moq.ts";
import { type LinkShape, startUdpProxy, type UdpProxy } from "../tests/support/udp_proxy.ts";
import { post, send, startLiveFunnel } from "../tests/support/live_funnel.ts";
import { sleep } from "../src/timers/mod.ts";
import { quantileTenth } from "./support/quantile.ts";

const { values } = benchArgs({
  records: { type: "string", default: "400" },
  rate: { type: "string", default: "20" },
  loss: { type: "string", default: "0.05" },
  delay: { type: "string", default: "50" },
  seed: { type: "string", default: "1" },
  json: { type: "boolean", default: false },
});
const RECORDS = Number(values.records);
const RATE = Number(values.rate);
const SHAPE: LinkShape = {
  loss: Number(values.loss),
  delayMs: Number(values.delay),
  jitterMs: 5,
  reorder: 0.02,
};
const seed = Number(values.seed);
console.debug = () => {}; // @moq/net's request log

interface PathResult {
  path: string;
  records: number;
  lost: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number };
  link: UdpProxy["counts"][];
}

/** Posts RECORDS records at RATE/s and measures their arrival on `sub`. */
async function measure(
  base: string,
  sub: Subscription,
  path: string,
  proxies: UdpProxy[],
): Promise<PathResult> {
  const acked = new Map<number, number>(); // sequence → ack time
  const arrived = new Map<number, number>();
  // A subscription starts at the latest record once the publisher has it:
  // a warm-up record received first makes every measured record one it must get.
  const it = sub[Symbol.asyncIterator]();
  const warm = await post(base, "room/1/chat", '"warm-up"');
  const warmSeq = Number(warm.group.split("-g")[1]) + 1;
  for (;;) {
    const r = await it.next();
    if (r.done) throw new Error("The subscription ended during the warm-up");
    if (r.value.sequence === warmSeq) break;
  }
  const reading = (async () => {
    for await (const g of { [Symbol.asyncIterator]: () => it }) {
      arrived.set(g.sequence, performance.now());
      if (acked.size === RECORDS && [...acked.keys()].every((s) => arrived.has(s))) break;
    }
  })();
  const started = performance.now();
  for (let i = 0; i < RECORDS; i++) {
    const r = await post(base, "room/1/chat", JSON.stringify({ i }));
    if (r.status !== 201) throw new Error(`POST answered ${r.status}`);
    acked.set(Number(r.group.split("-g")[1]) + 1, performance.now());
    await sleep(Math.max(0, started + ((i + 1) * 1000) / RATE - performance.now()));
  }
  await Promise.race([reading, sleep(15_000)]);
  sub.close();
  const latencies: number[] = [];
  let lost = 0;
  for (const [seq, at] of acked) {
    const got = arrived.get(seq);
    if (got === undefined) {
      lost++;
      console.error(`${path}: lost ${seq} (first ${[...acked.keys()][0]})`);
    } // A record can arrive before its 201 reaches the sender: latency 0 then.
    else latencies.push(Math.max(0, got - at));
  }
  latencies.sort((a, b) => a - b);
  return {
    path,
    records: acked.size,
    lost,
    latency_ms: {
      p50: quantileTenth(latencies, 0.5),
      p90: quantileTenth(latencies, 0.9),
      p99: quantileTenth(latencies, 0.99),
      max: quantileTenth(latencies, 1),
    },
    link: proxies.map((p) => p.counts),
  };
}

const results: PathResult[] = [];
const files = await testCertificateFiles();

// 1. funnel → lossy → relay → subscriber, and 2. the same with the subscriber's link lossy too.
{
  const relay = await startTestRelay();
  const up = startUdpProxy({ targetPort: relay.port, toTarget: SHAPE, toClient: SHAPE, seed });
  const funnel = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://localhost:${up.port}/`,
    RELAY_CA_FILE: files.cert,
  });
  await send(funnel.base, "PUT", "/tracks/room/1/chat");
  for (const both of [false, true]) {
    const down = both
      ? startUdpProxy({ targetPort: relay.port, toTarget: SHAPE, toClient: SHAPE, seed: seed + 1 })
      : undefined;
    const moq = await dialOurs(down?.port ?? relay.port);
    await seeAnnounced(moq, "room/1");
    const sub = moq.subscribe("room/1", "chat", { queueLimit: 4096 });
    await sub.ready;
    results.push(
      await measure(
        funnel.base,
        sub,
        both ? "funnel →lossy→ relay →lossy→ subscriber" : "funnel →lossy→ relay → subscriber",
        down ? [up, down] : [up],
      ),
    );
    moq.close(0, "done");
    await down?.close();
  }
  await funnel[Symbol.asyncDispose]();
  await up.close();
  await relay.stop();
}

// 3. the funnel's own listener →lossy→ subscriber.
{
  const funnel = await startLiveFunnel();
  const link = startUdpProxy({
    targetPort: funnel.moqPort,
    toTarget: SHAPE,
    toClient: SHAPE,
    seed: seed + 2,
  });
  await send(funnel.base, "PUT", "/tracks/room/1/chat");
  const moq = await dialOurs(link.port);
  await seeAnnounced(moq, "room/1");
  const sub = moq.subscribe("room/1", "chat", { queueLimit: 4096 });
  await sub.ready;
  results.push(await measure(funnel.base, sub, "funnel listener →lossy→ subscriber", [link]));
  moq.close(0, "done");
  await link.close();
  await funnel[Symbol.asyncDispose]();
}
await Deno.remove(files.dir, { recursive: true });

console.log(
  `links: ${
    SHAPE.loss! * 100
  }% loss, ${SHAPE.delayMs} ms one-way delay (+0..5 ms jitter), 2% reordered, each way; ${RECORDS} records at ${RATE}/s, seed ${seed}`,
);
for (const r of results) {
  console.log(
    `${r.path}: ${r.records} records, lost ${r.lost}; latency after the 201 p50 ${r.latency_ms.p50} ms, p90 ${r.latency_ms.p90} ms, p99 ${r.latency_ms.p99} ms, max ${r.latency_ms.max} ms`,
  );
}
if (values.json) console.log(JSON.stringify(results));
Deno.exit(results.some((r) => r.lost > 0) ? 1 : 0);
