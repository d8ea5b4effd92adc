import { errorText } from "../../../src/error_text/mod.ts";
import { generateDevCertificate } from "../../../src/certs/mod.ts";
import { connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { signToken } from "../../../src/auth/mod.ts";
import { writeKeySet } from "../key_set.ts";
import { LatencyHistogram } from "./latency.ts";
import { type FromWorker, type ToWorker, wallNow, type WorkerReport } from "./protocol.ts";
import { type LoadgenOptions, parseLoadgenArgs } from "./args.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks, relayPid, rssMib } from "./proc_stats.ts";
import { bucketQuantile, scrape } from "./relay_scrape.ts";
import { sleep } from "../../../src/timers/mod.ts";

/** The relay URL scheme of each subscriber transport. */
const SCHEMES = { quic: "moqt:", webtransport: "https:", websocket: "wss:" } as const;

/** What a run measured. */
export interface LoadgenResult {
  subscribers: number;
  held: number;
  failed: number;
  rate: number;
  size: number;
  duration_s: number;
  groups_published: number;
  relay_rss_base_mib: number;
  relay_rss_mib: number;
  rss_per_session_kib: number;
  relay_cpu_percent: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; samples: number };
  loss_percent: number;
  /** The relay's own view: group_delivery_seconds quantiles over the window (hand-off to sessions). */
  relay_delivery_ms: { p50: number; p99: number; count: number };
  /** subscriber_skips_total during the window. */
  relay_skips: number;
  first_error?: string;
  /** The relay's first warning lines (each kind is logged once per session). */
  relay_warnings: string[];
}

/** Writes a one-key JWK Set and signs a publisher and a subscriber credential for `path`. */
async function makeCredentials(
  dir: string,
  path: string,
): Promise<{ keysFile: string; publisher: string; subscriber: string }> {
  const { keysFile, privateJwk } = await writeKeySet(dir);
  const sign = (action: "publish" | "subscribe") =>
    signToken(privateJwk, { scopes: [{ actions: [action], broadcast: { exact: path } }] });
  return { keysFile, publisher: await sign("publish"), subscriber: await sign("subscribe") };
}

/** Thrown out of a run interrupted by SIGINT/SIGTERM (the relay child is still stopped). */
export class LoadgenAborted extends Error {
  /** Creates the error. */
  constructor() {
    super("Load generator interrupted");
    this.name = "LoadgenAborted";
  }
}

/**
 * Runs one load test and returns what it measured. Prints a progress line
 * per second to `progress`.
 */
export async function loadgen(
  o: LoadgenOptions,
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<LoadgenResult> {
  const cert = await generateDevCertificate();
  const dir = await Deno.makeTempDir({ prefix: "sluice-loadgen-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, cert.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, cert.keyPem);
  const port = freeUdpTcpPort();
  const path = `loadgen/${crypto.randomUUID().slice(0, 8)}`;
  const track = "data";
  const auth = o.auth ? await makeCredentials(dir, path) : undefined;
  const cli = new URL("../../../src/cli.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, "relay"],
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: `${dir}/cert.pem`,
      KEY_FILE: `${dir}/key.pem`,
      ...(auth ? { SLUICE_AUTH_KEYS: auth.keysFile } : {}),
      ...o.relayEnv,
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const relayLog: string[] = [];
  const logDone = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) {
      relayLog.push(...c.split("\n").filter((l) => l !== ""));
    }
  })();
  const workers: Worker[] = [];
  let publisher: MoqSession | undefined;
  let pubTimer: ReturnType<typeof setInterval> | undefined;
  try {
    for (let i = 0; !relayLog.some((l) => l.includes("relay: listening")); i++) {
      if (i > 600) throw new Error(`Relay did not start:\n${relayLog.join("\n")}`);
      await sleep(50);
      if (signal?.aborted) throw new LoadgenAborted();
    }
    const tick = async (ms: number) => {
      await sleep(ms);
      if (signal?.aborted) throw new LoadgenAborted();
    };
    const pid = relayPid(child.pid);
    const q = (jwt: string | undefined) => (jwt ? `?jwt=${jwt}` : "");
    const producer = new TrackProducer({ cache: 8 });
    publisher = await connect(
      await connectQuicSession(new URL(`moqt://localhost:${port}/${q(auth?.publisher)}`), {
        alpn: VERSIONS,
        serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      }),
      {
        serve: (r) => (r.path === path && r.track === track ? producer : "not-found"),
        log: () => {},
      },
    );
    publisher.announce(path);
    let seq = 0;
    const payload = new Uint8Array(o.size);
    crypto.getRandomValues(payload.subarray(8));
    const publish = () => {
      seq++;
      const p = payload.slice();
      new DataView(p.buffer).setFloat64(0, wallNow());
      producer.writeGroup(seq, p);
    };
    // Fixed-rate ticks that catch up when the timer fires late.
    const started = performance.now();
    pubTimer = setInterval(() => {
      const due = Math.floor(((performance.now() - started) / 1000) * o.rate);
      while (seq < due) publish();
    }, Math.max(1, Math.min(50, 1000 / o.rate / 2)));
    await tick(500);
    const rssBase = rssMib(pid);

    const latest = new Map<number, WorkerReport>();
    const latency = new LatencyHistogram();
    let stoppedCount = 0;
    let measuring = false;
    const allStopped = Promise.withResolvers<void>();
    const per = Math.floor(o.subscribers / o.workers);
    for (let w = 0; w < o.workers; w++) {
      const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
      workers.push(worker);
      worker.onmessage = (e: MessageEvent<FromWorker>) => {
        const m = e.data;
        if (m.type === "report") {
          latest.set(w, m);
          if (measuring) latency.merge(m.latency);
        } else if (++stoppedCount === o.workers) allStopped.resolve();
      };
      const share = w === o.workers - 1 ? o.subscribers - per * (o.workers - 1) : per;
      const start: ToWorker = {
        type: "start",
        url: `${SCHEMES[o.transport]}//localhost:${port}/${q(auth?.subscriber)}`,
        certSha256: cert.sha256,
        certPem: cert.certPem,
        sessions: share,
        concurrency: o.concurrency,
        path,
        track,
        transport: o.transport,
      };
      worker.postMessage(start);
    }
    const sum = (
      k: "held" | "connecting" | "failed" | "groups" | "windowReceived" | "windowSessions",
    ) => {
      let n = 0;
      for (const r of latest.values()) n += r[k];
      return n;
    };
    const firstError = () => [...latest.values()].find((r) => r.error)?.error;
    const line = (phase: string) =>
      `${phase} | sessions held ${sum("held")}/${o.subscribers} (connecting ${
        sum("connecting")
      }, failed ${sum("failed")}) | groups/s delivered ${sum("groups")} | relay RSS ${
        rssMib(pid).toFixed(0)
      } MiB`;

    // Ramp up until every session is held or failed, or no progress for rampTimeout.
    let lastSettled = -1;
    let stall = 0;
    while (sum("held") + sum("failed") < o.subscribers) {
      await tick(1000);
      progress(line("ramp"));
      // No session set up (or given up) for rampTimeout seconds: measure what is held.
      const settled = sum("held") + sum("failed");
      if (settled === lastSettled) stall++;
      else stall = 0;
      lastSettled = settled;
      if (stall >= o.rampTimeout) break;
    }
    for (let i = 0; i < o.settle; i++) {
      await tick(1000);
      progress(line("settle"));
    }
    const http = Deno.createHttpClient({ caCerts: [cert.certPem] });
    const before = await scrape(port, http);
    const from = seq + 1;
    for (const w of workers) {
      w.postMessage({ type: "window", from, to: undefined } satisfies ToWorker);
    }
    measuring = true;
    const cpu0 = cpuTicks(pid);
    const t0 = performance.now();
    for (let i = 0; i < o.duration; i++) {
      await tick(1000);
      const p = latency.total > 0
        ? ` | p50 ${latency.quantile(0.5).toFixed(1)} ms p99 ${
          latency.quantile(0.99).toFixed(1)
        } ms`
        : "";
      progress(line(`measure ${i + 1}/${o.duration}s`) + p);
    }
    const to = seq;
    const cpu1 = cpuTicks(pid);
    const elapsed = (performance.now() - t0) / 1000;
    for (const w of workers) w.postMessage({ type: "window", from, to } satisfies ToWorker);
    await tick(2000); // in-flight groups of the window arrive; two more reports come in
    measuring = false;
    const after = await scrape(port, http);
    http.close();
    const relayP50 = bucketQuantile(before, after, 0.5);
    const relayP99 = bucketQuantile(before, after, 0.99);
    const held = sum("held");
    const rss = rssMib(pid);
    const windowSessions = sum("windowSessions");
    const expected = windowSessions * (to - from + 1);
    const received = sum("windowReceived");
    const result: LoadgenResult = {
      subscribers: o.subscribers,
      held,
      failed: sum("failed"),
      rate: o.rate,
      size: o.size,
      duration_s: Math.round(elapsed * 10) / 10,
      groups_published: to - from + 1,
      relay_rss_base_mib: Math.round(rssBase * 10) / 10,
      relay_rss_mib: Math.round(rss * 10) / 10,
      rss_per_session_kib: held > 0 ? Math.round(((rss - rssBase) * 1024) / held * 10) / 10 : NaN,
      relay_cpu_percent: Math.round(((cpu1 - cpu0) / CLOCK_TICKS_PER_SECOND / elapsed) * 1000) / 10,
      latency_ms: {
        p50: latency.quantile(0.5),
        p90: latency.quantile(0.9),
        p99: latency.quantile(0.99),
        max: latency.quantile(1),
        samples: latency.total,
      },
      loss_percent: expected > 0 ? Math.round((1 - received / expected) * 10000) / 100 : NaN,
      relay_delivery_ms: { p50: relayP50.v, p99: relayP99.v, count: relayP50.count },
      relay_skips: after.skips - before.skips,
      ...(firstError() ? { first_error: firstError()! } : {}),
      relay_warnings: relayLog.filter((l) => /fail|error|refus/i.test(l)).slice(0, 5),
    };
    for (const w of workers) w.postMessage({ type: "stop" } satisfies ToWorker);
    let stopTimer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      allStopped.promise,
      new Promise((r) => (stopTimer = setTimeout(r, 10_000))),
    ]);
    clearTimeout(stopTimer);
    return result;
  } finally {
    if (pubTimer !== undefined) clearInterval(pubTimer);
    publisher?.close(0, "done");
    for (const w of workers) w.terminate();
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await logDone;
    await Deno.remove(dir, { recursive: true });
  }
}

/** Formats a result for people. */
export function formatResult(r: LoadgenResult): string {
  return [
    `subscribers requested ${r.subscribers}, sessions held ${r.held}, failed ${r.failed}`,
    `load: ${r.rate} groups/s of ${r.size} B for ${r.duration_s} s (${r.groups_published} groups)`,
    `relay RSS ${r.relay_rss_mib} MiB (before sessions ${r.relay_rss_base_mib} MiB) → ${r.rss_per_session_kib} KiB per session`,
    `relay CPU ${r.relay_cpu_percent}% of one core`,
    `delivery latency p50 ${r.latency_ms.p50} ms, p90 ${r.latency_ms.p90} ms, p99 ${r.latency_ms.p99} ms, max ${r.latency_ms.max} ms (${r.latency_ms.samples} samples)`,
    `loss ${r.loss_percent}%`,
    `relay side: hand-off to subscriber sessions p50 ≤ ${r.relay_delivery_ms.p50} ms, p99 ≤ ${r.relay_delivery_ms.p99} ms (${r.relay_delivery_ms.count} deliveries), subscriber skips ${r.relay_skips}`,
    ...(r.first_error ? [`first error: ${r.first_error}`] : []),
    ...r.relay_warnings.map((l) => `relay log: ${l}`),
  ].join("\n");
}

/** `deno task loadgen [flags]`: runs one load test and prints the result; returns the exit code. */
export async function runLoadgen(args: readonly string[]): Promise<number> {
  let o: LoadgenOptions;
  try {
    o = parseLoadgenArgs(args);
  } catch (e) {
    console.error(errorText(e));
    return 2;
  }
  const tty = Deno.stderr.isTerminal();
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  let r: LoadgenResult;
  try {
    r = await loadgen(o, (l) => {
      if (tty) Deno.stderr.writeSync(new TextEncoder().encode(`\r\x1b[K${l}`));
      else console.error(l);
    }, abort.signal);
  } catch (e) {
    if (e instanceof LoadgenAborted) {
      console.error(`\n${e.message}`);
      return 130;
    }
    throw e;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
  if (tty) console.error("");
  console.log(formatResult(r));
  if (o.json) console.log(JSON.stringify(r));
  return 0;
}
