// Network fuzzer: `deno run -A bench/fuzz.ts [--target relay|funnel] [--sessions N]
// [--duration S] [--concurrency C] [--seed N] [--transports quic,webtransport,websocket,websocket-frames,h3]
// [--json]`. Starts the target as a real process, runs a healthy
// publisher/subscriber pair through it, and opens hostile sessions (bounded by
// count and time) until done; then reports sessions tried per transport,
// hostile inputs sent, crashes, the healthy pair's delivery, the target's log
// lines per hostile session and its open file descriptors before and after.
// Exits 1 on a crash or stall.
import { benchArgs } from "./support/args.ts";
import { seededRandom } from "../tests/support/random.ts";
import {
  hostileSession,
  newTally,
  startHealthyPair,
  startTarget,
  type TargetKind,
  type Transport,
  TRANSPORTS,
} from "./support/fuzz/mod.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  target: { type: "string", default: "relay" },
  sessions: { type: "string", default: "2000" },
  duration: { type: "string", default: "300" },
  concurrency: { type: "string", default: "24" },
  seed: { type: "string", default: "1" },
  transports: { type: "string", default: TRANSPORTS.join(",") },
  json: { type: "boolean", default: false },
});
const kind = values.target as TargetKind;
if (kind !== "relay" && kind !== "funnel") throw new TypeError(`Unknown --target "${kind}"`);
const sessions = Number(values.sessions);
const seconds = Number(values.duration);
const concurrency = Number(values.concurrency);
const seed = Number(values.seed);
const transports = values.transports.split(",").map((t) => t.trim()) as Transport[];
for (const t of transports) {
  if (!TRANSPORTS.includes(t)) throw new TypeError(`Unknown transport "${t}" in --transports`);
}

const target = await startTarget(kind);
const startupLines = target.lines.length;
let crashed: number | undefined;
target.exited.then((code) => (crashed = code));
const rssStart = target.rss();
const healthy = await startHealthyPair(target);
const fdsStart = (await target.gc()).fds;
const tally = newTally();
const deadline = performance.now() + seconds * 1000;
const started = performance.now();
let launched = 0;
const worker = async (w: number) => {
  const rng = seededRandom(seed * 1000 + w);
  while (launched < sessions && performance.now() < deadline && crashed === undefined) {
    launched++;
    await hostileSession(target, rng, tally, transports);
  }
};
const progress = setInterval(() => {
  const h = healthy.report();
  console.error(
    `${
      Math.round((performance.now() - started) / 1000)
    } s | hostile sessions ${tally.sessions} (dial failed ${tally.dialFailures}), inputs ${tally.inputs} | healthy ${h.received}/${h.published}, missing ${h.missing}, longest gap ${h.longestGapMs} ms | ${kind} RSS ${
      target.rss().toFixed(0)
    } MiB`,
  );
}, 5000);
await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
clearInterval(progress);
const elapsed = (performance.now() - started) / 1000;
await sleep(2000); // hostile sessions' last streams settle
const h = await healthy.stop();
// Sockets of hostile peers must be gone: the close timeout (1 s) and QUIC's idle timeout (5 s) have passed.
await sleep(6000);
const fdsEnd = (await target.gc()).fds;
const hostileLines = target.lines.slice(startupLines).filter((l) => !l.startsWith("gc-host"));
const result = {
  target: kind,
  seed,
  seconds: Math.round(elapsed),
  hostile_sessions: tally.sessions,
  dial_failures: tally.dialFailures,
  hostile_inputs: tally.inputs,
  transports: tally.transports,
  actions: tally.actions,
  outcomes: tally.outcomes,
  fds: { start: fdsStart, end: fdsEnd },
  crashes: crashed === undefined ? 0 : 1,
  healthy: h,
  log_lines: hostileLines.length,
  log_lines_per_hostile_session:
    Math.round((hostileLines.length / Math.max(1, tally.sessions)) * 1000) / 1000,
  rss_mib: { start: Math.round(rssStart), end: Math.round(target.rss()) },
  sample_log: hostileLines.slice(0, 5),
};
const code = await target.stop();
console.log(
  [
    `${kind}: ${result.hostile_sessions} hostile sessions in ${result.seconds} s (seed ${seed}), ${result.dial_failures} dials refused or failed, ${result.hostile_inputs} hostile streams/messages`,
    `transports: ${Object.entries(tally.transports).map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `actions: ${Object.entries(tally.actions).map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `outcomes: ${Object.entries(tally.outcomes).map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `open fds in the ${kind}: ${fdsStart} with the healthy pair, ${fdsEnd} after the run`,
    `crashes: ${result.crashes} (exit code at stop: ${code})`,
    `healthy pair: ${h.received}/${h.published} groups, missing ${h.missing}, longest gap ${h.longestGapMs} ms, latency p50 ${h.latencyMs.p50} ms p99 ${h.latencyMs.p99} ms max ${h.latencyMs.max} ms, errors ${h.errors.length}`,
    `log: ${result.log_lines} lines (${result.log_lines_per_hostile_session} per hostile session)`,
    `RSS ${result.rss_mib.start} → ${result.rss_mib.end} MiB`,
    ...h.errors.slice(0, 5).map((e) => `healthy error: ${e}`),
    ...result.sample_log.map((l) => `log: ${l}`),
  ].join("\n"),
);
if (values.json) console.log(JSON.stringify(result));
const stalled = h.missing > 0 || h.longestGapMs > 2000 || h.errors.length > 0;
Deno.exit(result.crashes > 0 || stalled ? 1 : 0);
