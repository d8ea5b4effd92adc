/**
 * A `sluice relay` process (as deployed) with one fast WebSocket subscriber
 * and N WebSocket subscribers that stop reading their sockets (a TCP proxy
 * stops reading the relay's bytes toward them), while a native-QUIC
 * publisher sends groups at a fixed rate. Reports the relay's resident
 * memory over time, what the fast subscriber received and its delivery
 * latency, and the relay's skip counter; then the same run without the
 * stalled subscribers, for comparison.
 *
 *   deno run -A bench/websocket_slow_subscribers.ts [--slow N] [--seconds S]
 *     [--rate GROUPS_PER_S] [--size BYTES]
 */
import { connect, TrackProducer, VERSIONS } from "../src/moq/mod.ts";
import { connectQMux } from "../src/transport/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import { freeUdpTcpPort } from "../src/transport/mod.ts";
import { testCertificate, testCertificateFiles } from "../tests/support/certs.ts";
import { startServer } from "../tests/support/processes.ts";
import { startTcpProxy } from "../tests/support/tcp_proxy.ts";
import { LatencyHistogram } from "./support/loadgen/latency.ts";
import { rssMib } from "./support/loadgen/proc_stats.ts";
import { sleep } from "../src/timers/mod.ts";
import { benchArgs } from "./support/args.ts";

const { values } = benchArgs({
  slow: { type: "string", default: "20" },
  seconds: { type: "string", default: "15" },
  rate: { type: "string", default: "100" },
  size: { type: "string", default: String(64 * 1024) },
});
const slowCount = Number(values.slow);
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const size = Number(values.size);

interface Outcome {
  readonly rss: number[];
  readonly sent: number;
  readonly fastGot: number;
  readonly latency: LatencyHistogram;
  readonly skips: number;
}

async function run(slow: number): Promise<Outcome> {
  const files = await testCertificateFiles();
  const cert = await testCertificate();
  const port = freeUdpTcpPort();
  const relay = await startServer("relay", {
    env: { RELAY_ADDR: `127.0.0.1:${port}`, CERT_FILE: files.cert, KEY_FILE: files.key },
  });
  const pid = relay.serverPid();
  const proxy = startTcpProxy("127.0.0.1", port);
  const track = new TrackProducer({ cache: 8 });
  const publisher = await connect(
    await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      alpn: VERSIONS,
      caCerts: [cert.certPem],
    }),
    { serve: () => track },
  );
  publisher.announce("live/cam");
  const ws = (p: number) =>
    connectQMux(new URL(`wss://localhost:${p}/`), { protocols: VERSIONS, caCerts: [cert.certPem] })
      .then((s) => connect(s));
  const fast = await ws(port);
  const slowOnes = await Promise.all(Array.from({ length: slow }, () => ws(proxy.port)));
  for await (const e of fast.announced("")) if (e.active && e.path === "live/cam") break;
  const subs = [fast, ...slowOnes].map((m) => m.subscribe("live/cam", "t"));
  await Promise.all(subs.map((s) => s.ready));
  proxy.holdDownstream();

  const latency = new LatencyHistogram();
  let fastGot = 0;
  const reading = (async () => {
    for await (const g of subs[0]!) {
      const f = g.frames[0]!;
      latency.record(performance.now() - new DataView(f.buffer, f.byteOffset).getFloat64(0));
      fastGot++;
    }
  })().catch(() => {});
  const rss: number[] = [rssMib(pid)];
  const start = performance.now();
  let sent = 0;
  let nextSample = start + 1000;
  while (performance.now() - start < seconds * 1000) {
    const payload = new Uint8Array(size);
    new DataView(payload.buffer).setFloat64(0, performance.now());
    track.writeGroup(++sent, payload);
    const due = start + (sent * 1000) / rate;
    if (performance.now() >= nextSample) {
      rss.push(rssMib(pid));
      nextSample += 1000;
    }
    await sleep(Math.max(0, due - performance.now()));
  }
  await sleep(500);
  rss.push(rssMib(pid));
  const http = Deno.createHttpClient({ caCerts: [cert.certPem] });
  const metrics = await (await fetch(`https://localhost:${port}/metrics`, { client: http })).text();
  http.close();
  const skips = Number(/^sluice_relay_subscriber_skips_total (\S+)$/m.exec(metrics)?.[1] ?? 0);
  for (const m of [publisher, fast, ...slowOnes]) m.close(0, "");
  await reading;
  await relay.stop();
  await proxy.close();
  await Deno.remove(files.dir, { recursive: true });
  return { rss, sent, fastGot, latency, skips };
}

function report(label: string, o: Outcome): void {
  const peak = Math.max(...o.rss);
  console.log(
    `${label}: relay RSS MiB start ${o.rss[0]!.toFixed(0)}, peak ${peak.toFixed(0)}, end ${
      o.rss.at(-1)!.toFixed(0)
    } (each second: ${o.rss.map((r) => r.toFixed(0)).join(" ")})`,
  );
  console.log(
    `  fast subscriber: ${o.fastGot} of ${o.sent} groups, latency p50 ${
      o.latency.quantile(0.5).toFixed(1)
    } ms p99 ${o.latency.quantile(0.99).toFixed(1)} ms; relay skips ${o.skips}`,
  );
}

const mib = (rate * size * seconds) / 2 ** 20;
console.log(
  `${seconds} s at ${rate} groups/s of ${size} B (${mib.toFixed(0)} MiB offered to each ` +
    `subscriber), one fast WebSocket subscriber:`,
);
report(`with ${slowCount} stalled WebSocket subscribers`, await run(slowCount));
report("without them", await run(0));
