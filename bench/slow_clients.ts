// Slow and idle HTTP clients against a funnel process: `deno run -A
// bench/slow_clients.ts [--idle N] [--partial N] [--trickle N] [--requests N] [--json]`.
// Opens N keep-alive connections that made one request and went quiet, N that
// sent half a request head and stopped, and N that trickle a POST body one
// byte a second; meanwhile a normal client POSTs records. Reports the normal
// client's latency before and during, the funnel's RSS and open descriptors,
// and how the trickled POSTs were answered.
import { benchArgs } from "./support/args.ts";
import { startTarget } from "./support/fuzz/mod.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  idle: { type: "string", default: "5000" },
  partial: { type: "string", default: "1000" },
  trickle: { type: "string", default: "200" },
  requests: { type: "string", default: "300" },
  json: { type: "boolean", default: false },
});
const encoder = new TextEncoder();
const target = await startTarget("funnel");
const port = target.httpPort;
const auth = `authorization: Bearer ${target.jwt.healthy}\r\n`;
const fds = () => {
  try {
    return [...Deno.readDirSync(`/proc/${target.pid()}/fd`)].length;
  } catch {
    return NaN;
  }
};

/** POSTs `n` records one after another; returns latency percentiles in ms. */
async function normalClient(
  n: number,
): Promise<{ p50: number; p99: number; max: number; failed: number }> {
  const url = `http://127.0.0.1:${port}/tracks/healthy/feed/data`;
  const headers = { authorization: `Bearer ${target.jwt.healthy}` };
  const times: number[] = [];
  let failed = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(url, { method: "POST", body: `{"i":${i}}`, headers });
    await r.body?.cancel();
    if (r.status !== 201) failed++;
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) =>
    Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]! * 10) / 10;
  return { p50: q(0.5), p99: q(0.99), max: q(1), failed };
}

const put = await fetch(`http://127.0.0.1:${port}/tracks/healthy/feed/data`, {
  method: "PUT",
  headers: { authorization: `Bearer ${target.jwt.healthy}` },
});
await put.body?.cancel();
const baseRss = target.rss();
const baseFds = fds();
const before = await normalClient(Number(values.requests));

const conns: Deno.Conn[] = [];
const open = async (head: string): Promise<Deno.Conn> => {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  await c.write(encoder.encode(head));
  conns.push(c);
  return c;
};
// Idle keep-alive: one request answered, then nothing.
const buf = new Uint8Array(4096);
for (let i = 0; i < Number(values.idle); i++) {
  const c = await open("GET /health HTTP/1.1\r\nhost: x\r\n\r\n");
  await c.read(buf);
}
// Half a request head, then nothing.
for (let i = 0; i < Number(values.partial); i++) {
  await open(
    i % 2 ? "POST /tracks/healthy/feed/da" : "GET /health HTTP/1.1\r\nhost: x\r\nx-slow: ",
  );
}
// A POST body trickled one byte a second: answered 408 at the body deadline (10 s).
const trickled: Promise<string>[] = [];
let trickling = true;
for (let i = 0; i < Number(values.trickle); i++) {
  const c = await open(
    `POST /tracks/healthy/feed/data HTTP/1.1\r\nhost: x\r\n${auth}content-length: 100\r\n\r\n{`,
  );
  trickled.push((async () => {
    const writer = (async () => {
      while (trickling) {
        await sleep(1000);
        try {
          await c.write(encoder.encode(" "));
        } catch {
          return;
        }
      }
    })();
    const b = new Uint8Array(4096);
    const n = await c.read(b).catch(() => null);
    const status = n ? new TextDecoder().decode(b.subarray(0, n)).split(" ")[1] ?? "?" : "closed";
    void writer;
    return status;
  })());
}
const held = { rss: target.rss(), fds: fds() };
const during = await normalClient(Number(values.requests));
const statuses = await Promise.race([
  Promise.all(trickled),
  sleep(20_000).then(() => ["(no answer within 20 s)"]),
]);
trickling = false;
const answered: Record<string, number> = {};
for (const s of statuses) answered[s] = (answered[s] ?? 0) + 1;
for (const c of conns) c.close();
await sleep(1000);
const result = {
  idle: Number(values.idle),
  partial: Number(values.partial),
  trickle: Number(values.trickle),
  normal_before_ms: before,
  normal_during_ms: during,
  funnel_rss_mib: { before: Math.round(baseRss), holding: Math.round(held.rss) },
  funnel_fds: { before: baseFds, holding: held.fds, after_close: fds() },
  rss_per_held_connection_kib: Math.round(((held.rss - baseRss) * 1024) / conns.length * 10) / 10,
  trickled_answers: answered,
  crashed: false,
};
const code = await target.stop();
result.crashed = code !== 0;
console.log(
  [
    `held ${result.idle} idle keep-alive, ${result.partial} half-sent heads, ${result.trickle} trickled bodies`,
    `normal POST latency before: p50 ${before.p50} ms, p99 ${before.p99} ms (failed ${before.failed}); while held: p50 ${during.p50} ms, p99 ${during.p99} ms, max ${during.max} ms (failed ${during.failed})`,
    `funnel RSS ${result.funnel_rss_mib.before} → ${result.funnel_rss_mib.holding} MiB (${result.rss_per_held_connection_kib} KiB per held connection); descriptors ${baseFds} → ${held.fds} → ${result.funnel_fds.after_close} after the clients closed`,
    `trickled POSTs answered: ${JSON.stringify(answered)}`,
  ].join("\n"),
);
if (values.json) console.log(JSON.stringify(result));
