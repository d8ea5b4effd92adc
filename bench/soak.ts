// Soak run: `deno run -A bench/soak.ts [--target relay|funnel] [--minutes M]
// [--subscribers N] [--publishers N] [--refused N] [--hostile N] [--concurrency C]
// [--seed N] [--transports quic,webtransport,websocket,websocket-frames,h3]
// [--env NAME=VALUE]... [--no-trim] [--json]`. Starts the target as a real process, keeps a healthy
// pair running through it, and sends waves of sessions over native QUIC,
// WebTransport and QMux over WebSocket (well-formed
// subscribers and publishers, refused and hostile ones) that connect and
// leave, for at least M minutes. After each wave it lets the sessions end,
// collects garbage in the target and prints its RSS, V8 heap, external
// memory and open file descriptors, so growth per wave shows.
import { benchArgs } from "./support/args.ts";
import { connect, TrackProducer, VERSIONS } from "../src/moq/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import { connectQMux } from "../src/transport/mod.ts";
import { connectWebTransport } from "../src/transport/mod.ts";
import { seededRandom } from "../tests/support/random.ts";
import {
  type GcSample,
  hostileSession,
  newTally,
  type Rng,
  startHealthyPair,
  startTarget,
  type Target,
  type TargetKind,
  type Transport,
  TRANSPORTS,
} from "./support/fuzz/mod.ts";
import { HEALTHY_PATH, HEALTHY_TRACK } from "./support/fuzz/target.ts";
import { sleep } from "../src/timers/mod.ts";

const { values } = benchArgs({
  target: { type: "string", default: "relay" },
  minutes: { type: "string", default: "10" },
  subscribers: { type: "string", default: "60" },
  publishers: { type: "string", default: "40" },
  refused: { type: "string", default: "100" },
  hostile: { type: "string", default: "300" },
  concurrency: { type: "string", default: "100" },
  settle: { type: "string", default: "7" },
  seed: { type: "string", default: "1" },
  transports: { type: "string", default: TRANSPORTS.join(",") },
  env: { type: "string", multiple: true, default: [] },
  "no-trim": { type: "boolean", default: false },
  json: { type: "boolean", default: false },
});
const kind = values.target as TargetKind;
if (kind !== "relay" && kind !== "funnel") throw new TypeError(`Unknown --target "${kind}"`);
const counts = {
  subscriber: Number(values.subscribers),
  publisher: Number(values.publishers),
  refused: Number(values.refused),
  hostile: Number(values.hostile),
};
// Well-formed sessions dial the ways among these that carry moq; hostile ones take them all.
const transports = values.transports.split(",").map((t) => t.trim()) as Transport[];
for (const t of transports) {
  if (!TRANSPORTS.includes(t)) throw new TypeError(`Unknown transport "${t}" in --transports`);
}
const moqWays = (["quic", "webtransport", "websocket"] as const).filter((t) =>
  transports.includes(t)
);
if (moqWays.length === 0) {
  throw new TypeError("--transports names none of quic, webtransport, websocket");
}

/** Dials the target as a moq client over native QUIC, WebTransport or QMux over WebSocket. */
async function dial(target: Target, rng: Rng, jwt: string | undefined) {
  const query = jwt === undefined ? "" : `?jwt=${jwt}`;
  const way = moqWays[Math.floor(rng() * moqWays.length)];
  const session = way === "websocket"
    ? await connectQMux(new URL(`wss://127.0.0.1:${target.moqPort}/${query}`), {
      protocols: VERSIONS,
      caCerts: [target.certPem],
      serverName: "localhost",
      timeoutMs: 5000,
    })
    : way === "webtransport"
    ? await connectWebTransport(new URL(`https://localhost:${target.moqPort}/${query}`), {
      protocols: VERSIONS,
      serverCertificateHashes: [target.certSha256],
      timeoutMs: 5000,
    })
    : await connectQuicSession(new URL(`moqt://localhost:${target.moqPort}/${query}`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: target.certSha256 }],
    });
  return await connect(session, { log: () => {} });
}

/** A well-formed subscriber: receives the healthy track for a second or two, then leaves. */
async function subscriber(target: Target, rng: Rng): Promise<void> {
  const moq = await dial(target, rng, target.jwt.hostile);
  try {
    const sub = moq.subscribe(HEALTHY_PATH, HEALTHY_TRACK);
    const until = performance.now() + 1000 + rng() * 1000;
    for await (const _ of sub) if (performance.now() > until) break;
  } finally {
    moq.close(0, "bye");
  }
}

/** A well-formed publisher: on the relay it announces a broadcast and writes groups; on the funnel it POSTs records. */
async function publisher(target: Target, rng: Rng, n: number): Promise<void> {
  if (target.kind === "funnel") {
    // A handful of tracks, so the memory ledger's growth stays a few records per wave.
    const url = `http://127.0.0.1:${target.httpPort}/tracks/fuzz/p${n % 8}/data`;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(url, {
        method: "POST",
        body: `{"n":${n}}`,
        headers: { authorization: `Bearer ${target.jwt.hostile}` },
      });
      await r.body?.cancel();
    }
    return;
  }
  const producer = new TrackProducer({ cache: 8 });
  const moq = await dial(target, rng, target.jwt.hostile);
  const path = `fuzz/p${n}`;
  moq.announce(path);
  try {
    for (let i = 1; i <= 20; i++) {
      producer.writeGroup(i, new Uint8Array(200 + Math.floor(rng() * 2000)));
      await sleep(50);
    }
  } finally {
    moq.close(0, "bye");
  }
  void path;
}

/** A session the target must refuse: no credential, or a forged one. */
async function refused(target: Target, rng: Rng): Promise<void> {
  const jwt = rng() < 0.5 ? undefined : target.jwt.hostile.slice(0, -4) + "AAAA";
  let moq;
  try {
    moq = await dial(target, rng, jwt);
  } catch {
    return; // refused at the door (a WebTransport CONNECT or WebSocket upgrade is answered 401)
  }
  // Over native QUIC the refusal closes the session once it is set up.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const closed = await Promise.race([
    moq.closed.then(() => true),
    new Promise<false>((r) => (timer = setTimeout(() => r(false), 3000))),
  ]);
  clearTimeout(timer);
  moq.close(0, "bye");
  if (!closed) throw new Error("A session without a valid credential stayed open for 3 s");
}

// --env NAME=VALUE (repeatable) goes into the target's environment (e.g. malloc tunables).
const targetEnv = Object.fromEntries(
  (values.env as string[]).map((
    kv,
  ) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
);
// --no-trim denies the target FFI: freed native memory then stays with it (the "before").
const target = await startTarget(kind, targetEnv, { ffi: !values["no-trim"] });
let crashed: number | undefined;
target.exited.then((code) => (crashed = code));
const healthy = await startHealthyPair(target);
const seed = Number(values.seed);
const rng = seededRandom(seed);
const tally = newTally();
const settleMs = Number(values.settle) * 1000;
await sleep(settleMs);
const baseline = await target.gc();
console.error(`baseline | ${line(baseline)}`);
const waves: { wave: number; seconds: number; sample: GcSample; failures: number }[] = [];
const started = performance.now();
const endAt = started + Number(values.minutes) * 60_000;
let sessionsTotal = 0;
let failures = 0;
const firstFailures: string[] = [];

function line(s: GcSample): string {
  return `RSS ${s.rssMib} MiB (${s.trimmedRssMib} MiB once trimmed), heap ${s.heapMib} MiB, external ${s.externalMib} MiB, fds ${s.fds}`;
}

for (let wave = 1; performance.now() < endAt && crashed === undefined; wave++) {
  const jobs: (() => Promise<void>)[] = [];
  for (let i = 0; i < counts.subscriber; i++) jobs.push(() => subscriber(target, rng));
  for (let i = 0; i < counts.publisher; i++) {
    const n = wave * 1000 + i;
    jobs.push(() => publisher(target, rng, n));
  }
  for (let i = 0; i < counts.refused; i++) jobs.push(() => refused(target, rng));
  for (let i = 0; i < counts.hostile; i++) {
    jobs.push(() => hostileSession(target, rng, tally, transports));
  }
  // Shuffle, then run with bounded concurrency.
  for (let i = jobs.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [jobs[i], jobs[j]] = [jobs[j]!, jobs[i]!];
  }
  let next = 0;
  let waveFailures = 0;
  const runner = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!;
      try {
        await job();
      } catch (e) {
        waveFailures++;
        if (firstFailures.length < 5) firstFailures.push(String(e));
      }
    }
  };
  await Promise.all(Array.from({ length: Number(values.concurrency) }, runner));
  sessionsTotal += jobs.length;
  failures += waveFailures;
  await sleep(settleMs); // sessions end, idle tracks are dropped
  const sample = await target.gc();
  const seconds = Math.round((performance.now() - started) / 1000);
  waves.push({ wave, seconds, sample, failures: waveFailures });
  const h = healthy.report();
  console.error(
    `wave ${wave} (${seconds} s, ${jobs.length} sessions, ${waveFailures} well-formed failed) | ${
      line(sample)
    } | healthy ${h.received}/${h.published} missing ${h.missing} gap ${h.longestGapMs} ms`,
  );
}
const crashes = crashed === undefined ? 0 : 1;
const h = await healthy.stop();
const code = await target.stop();
const first = waves[0]?.sample;
const last = waves.at(-1)?.sample;
const result = {
  target: kind,
  seed,
  minutes: Math.round((performance.now() - started) / 6000) / 10,
  waves: waves.length,
  sessions: sessionsTotal,
  per_wave: counts,
  well_formed_failures: failures,
  first_failures: firstFailures,
  hostile_inputs: tally.inputs,
  crashes,
  exit_code: code,
  baseline,
  after_each_wave: waves.map((w) => ({ wave: w.wave, s: w.seconds, ...w.sample })),
  growth_first_to_last_mib: first && last
    ? Math.round((last.rssMib - first.rssMib) * 10) / 10
    : NaN,
  healthy: h,
};
console.log(
  [
    `${kind}: ${result.waves} waves, ${result.sessions} sessions in ${result.minutes} min (seed ${seed}); crashes ${result.crashes}; well-formed failures ${failures}`,
    `baseline after GC: ${line(baseline)}`,
    ...waves.map((w) => `after wave ${w.wave} (${w.seconds} s): ${line(w.sample)}`),
    `RSS growth from the first wave's plateau to the last: ${result.growth_first_to_last_mib} MiB`,
    `healthy pair: ${h.received}/${h.published} groups, missing ${h.missing} (our reader's own drops ${h.clientSkipped}), longest gap ${h.longestGapMs} ms, latency p50 ${h.latencyMs.p50} ms p99 ${h.latencyMs.p99} ms`,
    ...firstFailures.map((f) => `failure: ${f}`),
  ].join("\n"),
);
if (values.json) console.log(JSON.stringify(result));
Deno.exit(result.crashes > 0 || h.missing > 0 ? 1 : 0);
