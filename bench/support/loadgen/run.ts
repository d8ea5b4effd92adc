import { errorText } from "../../../src/error_text/mod.ts";
import { generateDevCertificate } from "../../../src/certs/mod.ts";
import { connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { freeUdpTcpPort, udpSocketDrops } from "../../../src/transport/mod.ts";
import { signToken } from "../../../src/auth/mod.ts";
import { writeKeySet } from "../key_set.ts";
import { LatencyHistogram } from "./latency.ts";
import { type FromWorker, type ToWorker, wallNow, type WorkerReport } from "./protocol.ts";
import { type LoadgenOptions, parseLoadgenArgs } from "./args.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks, rssMib } from "./proc_stats.ts";
import { bucketQuantile, scrape } from "./relay_scrape.ts";
import { sleep } from "../../../src/timers/mod.ts";
import { spawnServer } from "../../../tests/support/processes.ts";

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
  /** The relay's memory after a full GC at the end of the window, MiB (RSS, JS heap, external). */
  relay_memory_after_gc_mib: { rss: number; heap_used: number; external: number } | undefined;
  /** The same before the first session (after the publisher connected), MiB. */
  relay_memory_base_after_gc_mib: { rss: number; heap_used: number; external: number } | undefined;
  /** JS heap after a GC per session held: (window's end - before sessions) / held, KiB. */
  heap_per_session_kib: number;
  /** Datagrams dropped for a full UDP receive buffer over the whole run, at each side's sockets. */
  udp_drops: { relay: number; loadgen: number };
  /** Set-up of the sessions (dial to subscribed), apart from holding them. */
  admission: Admission;
  /** CPU in moq-bench's terms: µs of CPU per connection set up, per published message, per delivered copy. */
  cpu: CpuFigures;
  /** The load generator's own CPU (all its threads), % of one core: ramp and measure phases. */
  loadgen_cpu_percent: { ramp: number; measure: number };
  first_error?: string;
  /** The relay's first warning lines (each kind is logged once per session). */
  relay_warnings: string[];
}

/** How the sessions were set up. */
export interface Admission {
  /** Target dials per second (0: unpaced, `--concurrency` in flight per worker). */
  target_per_s: number;
  /** Seconds from the first dial until every session was held or failed (or the ramp gave up). */
  seconds: number;
  /** Sessions set up per second over the whole ramp. */
  per_s: number;
  /** Sessions set up in each second of the ramp. */
  per_second: number[];
  /** Set-up time, dial to subscribed. */
  setup_ms: { p50: number; p99: number; max: number };
  /**
   * Its QUIC handshake part, dial to connected (WebTransport: to the session; WebSocket: to the
   * socket); the rest is moq SETUP and SUBSCRIBE.
   */
  handshake_ms: { p50: number; p99: number; max: number };
  /**
   * Handshakes and whole set-ups that took a second or more, counted by whole seconds taken
   * (index 1: 1–2 s, ...; the last, 10 s or more): QUIC's loss recovery backs off by doubling,
   * so handshakes whose packets were dropped finish near 1, 3, 7 and 15 s after the dial.
   */
  slow_by_second: { handshake: number[]; setup: number[] };
  /** Failures by reason, during the ramp and after. */
  failures: Record<string, number>;
}

/** CPU per unit, µs, for the relay and for the load generator (the subscribers' client side). */
export interface CpuFigures {
  /** Relay CPU over the ramp per session set up. */
  relay_us_per_connection: number;
  /** Relay CPU over the measure window per group published. */
  relay_us_per_published: number;
  /** Relay CPU over the measure window per group copy delivered to a subscriber. */
  relay_us_per_delivered: number;
  /** Load generator CPU over the ramp per session set up. */
  client_us_per_connection: number;
  /** Load generator CPU over the measure window per group copy received. */
  client_us_per_delivered: number;
}

/** Asks the relay's /debug/pprof/profile for `seconds` of CPU profile and writes it to `file`. */
async function captureProfile(
  port: number,
  client: Deno.HttpClient,
  seconds: number,
  file: string,
): Promise<string> {
  const res = await fetch(`https://localhost:${port}/debug/pprof/profile?seconds=${seconds}`, {
    client,
  });
  if (!res.ok) return `profile not taken: ${res.status} ${await res.text()}`;
  await Deno.writeTextFile(file, await res.text());
  return `relay CPU profile (${seconds} s) written to ${file}`;
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
  // The relay as `sluice relay` runs it, with a hook that reports its memory after a GC on
  // SIGUSR2 (where a session's bytes are: JavaScript heap, external buffers, or native).
  const host = new URL("../gc_host.ts", import.meta.url).pathname;
  const raw = o.target === "raw";
  const rawServer = new URL("./raw_server.ts", import.meta.url).pathname;
  const relay = spawnServer("relay", {
    // The host scripts run what the relay runs, with more (a GC hook, a raw stand-in): all flags.
    flags: "all",
    denoArgs: ["--v8-flags=--expose-gc"],
    cli: raw ? rawServer : host,
    args: raw ? [String(port), `${dir}/cert.pem`, `${dir}/key.pem`, String(o.size)] : ["relay"],
    stdin: raw,
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: `${dir}/cert.pem`,
      KEY_FILE: `${dir}/key.pem`,
      ...(auth ? { SLUICE_AUTH_KEYS: auth.keysFile } : {}),
      ...(o.profile || o.heap ? { RELAY_PPROF: "1" } : {}),
      ...o.relayEnv,
    },
  });
  const child = relay.child;
  const relayLog = relay.lines;
  const workers: Worker[] = [];
  let publisher: MoqSession | undefined;
  let pubTimer: ReturnType<typeof setInterval> | undefined;
  try {
    const listening = raw ? "raw: listening" : "relay: listening";
    const aborted = new Promise<never>((_, reject) => {
      const stop = () => reject(new LoadgenAborted());
      if (signal?.aborted) stop();
      signal?.addEventListener("abort", stop, { once: true });
    });
    aborted.catch(() => {});
    await Promise.race([relay.waitForLine(listening, 30_000), aborted]);
    const tick = async (ms: number) => {
      await sleep(ms);
      if (signal?.aborted) throw new LoadgenAborted();
    };
    const pid = relay.serverPid();
    const q = (jwt: string | undefined) => (jwt ? `?jwt=${jwt}` : "");
    const producer = new TrackProducer({ cache: 8 });
    const rawFeed = raw ? child.stdin.getWriter() : undefined;
    const encoder = new TextEncoder();
    publisher = raw ? undefined : await connect(
      await connectQuicSession(new URL(`moqt://localhost:${port}/${q(auth?.publisher)}`), {
        alpn: VERSIONS,
        serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      }),
      {
        serve: (r) => (r.path === path && r.track === track ? producer : "not_found"),
        log: () => {},
      },
    );
    publisher?.announce(path);
    let seq = 0;
    const payload = new Uint8Array(o.size);
    crypto.getRandomValues(payload.subarray(8));
    const publish = () => {
      seq++;
      if (rawFeed) {
        rawFeed.write(encoder.encode(`${seq}\n`)).catch(() => {});
        return;
      }
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
    // The JS heap before any session, so that the heap per session is the sessions' own.
    const memoryBase = await memoryAfterGc(pid, relayLog);

    const latest = new Map<number, WorkerReport>();
    const latency = new LatencyHistogram();
    const setupLatency = new LatencyHistogram();
    const handshakeLatency = new LatencyHistogram();
    let setupMaxMs = 0;
    let handshakeMaxMs = 0;
    let setupsSinceTick = 0;
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
          setupLatency.merge(m.setupLatency);
          handshakeLatency.merge(m.handshakeLatency);
          setupMaxMs = Math.max(setupMaxMs, m.setupMaxMs);
          handshakeMaxMs = Math.max(handshakeMaxMs, m.handshakeMaxMs);
          setupsSinceTick += m.setups;
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
        rampPerSecond: o.ramp / o.workers,
        raw,
        udpReceiveBuffer: !o.clientHostBuffer,
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
    // UDP datagrams dropped for a full receive buffer so far, at the relay and at the load generator.
    const clientPorts = () => [...latest.values()].flatMap((r) => r.ports);
    const drops = () =>
      ` | UDP drops relay ${udpSocketDrops([port])} loadgen ${udpSocketDrops(clientPorts())}`;
    const line = (phase: string) =>
      `${phase} | sessions held ${sum("held")}/${o.subscribers} (connecting ${
        sum("connecting")
      }, failed ${sum("failed")}) | groups/s delivered ${sum("groups")} | relay RSS ${
        rssMib(pid).toFixed(0)
      } MiB`;

    const http = Deno.createHttpClient({ caCerts: [cert.certPem] });
    const profiled: Promise<string>[] = [];
    const profile = () => {
      if (o.profile && !raw) profiled.push(captureProfile(port, http, o.profileSeconds, o.profile));
    };
    // Ramp up until every session is held or failed, or no progress for rampTimeout.
    const self = Deno.pid;
    const rampCpu0 = cpuTicks(pid);
    const ownCpu0 = cpuTicks(self);
    const rampT0 = performance.now();
    const perSecond: number[] = [];
    if (o.profilePhase === "ramp") profile();
    let lastSettled = -1;
    let stall = 0;
    let lastCpu = [rampCpu0, ownCpu0];
    while (sum("held") + sum("failed") < o.subscribers) {
      await tick(1000);
      perSecond.push(setupsSinceTick);
      setupsSinceTick = 0;
      // Which side is the limit: each process's CPU over the last second.
      const cpuNow = [cpuTicks(pid), cpuTicks(self)];
      const [relayPct, ownPct] = cpuNow.map((t, i) => t - lastCpu[i]!);
      lastCpu = cpuNow;
      progress(
        `${line("ramp")} | set up ${
          perSecond.at(-1)
        }/s | CPU relay ${relayPct}% loadgen ${ownPct}% | loadgen loop lag ${
          Math.round(Math.max(0, ...[...latest.values()].map((r) => r.loopLagMaxMs)))
        } ms${drops()}`,
      );
      // No session set up (or given up) for rampTimeout seconds: measure what is held.
      const settled = sum("held") + sum("failed");
      if (settled === lastSettled) stall++;
      else stall = 0;
      lastSettled = settled;
      if (stall >= o.rampTimeout) break;
      // A ramp that stalls but never stops (one session set up now and then) is cut here.
      if (o.rampLimit > 0 && performance.now() - rampT0 >= o.rampLimit * 1000) break;
    }
    // The last second's setups (the loop may end before a report came in).
    if (setupsSinceTick > 0) perSecond.push(setupsSinceTick);
    const rampSeconds = (performance.now() - rampT0) / 1000;
    const rampCpu = cpuTicks(pid) - rampCpu0;
    const rampOwnCpu = cpuTicks(self) - ownCpu0;
    const setUp = perSecond.reduce((a, b) => a + b, 0);
    for (let i = 0; i < o.settle; i++) {
      await tick(1000);
      progress(line("settle"));
    }
    const noScrape = { buckets: new Map<number, number>(), skips: 0 };
    const before = raw ? noScrape : await scrape(port, http);
    if (o.profilePhase === "measure") profile();
    const from = seq + 1;
    for (const w of workers) {
      w.postMessage({ type: "window", from, to: undefined } satisfies ToWorker);
    }
    measuring = true;
    const cpu0 = cpuTicks(pid);
    const own0 = cpuTicks(self);
    const t0 = performance.now();
    for (let i = 0; i < o.duration; i++) {
      await tick(1000);
      const p = latency.total > 0
        ? ` | p50 ${latency.quantile(0.5).toFixed(1)} ms p99 ${
          latency.quantile(0.99).toFixed(1)
        } ms`
        : "";
      progress(line(`measure ${i + 1}/${o.duration}s`) + p + drops());
    }
    const to = seq;
    const cpu1 = cpuTicks(pid);
    const own1 = cpuTicks(self);
    const elapsed = (performance.now() - t0) / 1000;
    for (const w of workers) w.postMessage({ type: "window", from, to } satisfies ToWorker);
    await tick(2000); // in-flight groups of the window arrive; two more reports come in
    measuring = false;
    const after = raw ? noScrape : await scrape(port, http);
    const memory = await memoryAfterGc(pid, relayLog);
    if (o.heap && !raw) {
      const res = await fetch(`https://localhost:${port}/debug/pprof/heap`, { client: http });
      await Deno.writeFile(o.heap, new Uint8Array(await res.arrayBuffer()));
      progress(`relay heap snapshot written to ${o.heap}`);
    }
    for (const note of await Promise.all(profiled)) progress(note);
    http.close();
    const relayP50 = bucketQuantile(before, after, 0.5);
    const relayP99 = bucketQuantile(before, after, 0.99);
    const held = sum("held");
    const rss = rssMib(pid);
    const windowSessions = sum("windowSessions");
    const expected = windowSessions * (to - from + 1);
    const received = sum("windowReceived");
    const us = (ticks: number, per: number) =>
      per > 0 ? Math.round((ticks / CLOCK_TICKS_PER_SECOND) * 1e6 / per * 10) / 10 : NaN;
    const pct = (ticks: number, seconds: number) =>
      Math.round(((ticks / CLOCK_TICKS_PER_SECOND) / seconds) * 1000) / 10;
    const published = to - from + 1;
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
      relay_memory_after_gc_mib: memory,
      relay_memory_base_after_gc_mib: memoryBase,
      heap_per_session_kib: memory && memoryBase && held > 0
        ? Math.round(((memory.heap_used - memoryBase.heap_used) * 1024) / held * 10) / 10
        : NaN,
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
      udp_drops: { relay: udpSocketDrops([port]), loadgen: udpSocketDrops(clientPorts()) },
      admission: {
        target_per_s: o.ramp,
        seconds: Math.round(rampSeconds * 10) / 10,
        per_s: Math.round(setUp / rampSeconds),
        per_second: perSecond,
        setup_ms: {
          p50: setupLatency.quantile(0.5),
          p99: setupLatency.quantile(0.99),
          max: Math.round(setupMaxMs * 10) / 10,
        },
        slow_by_second: {
          handshake: handshakeLatency.bySecond(),
          setup: setupLatency.bySecond(),
        },
        handshake_ms: {
          p50: handshakeLatency.quantile(0.5),
          p99: handshakeLatency.quantile(0.99),
          max: Math.round(handshakeMaxMs * 10) / 10,
        },
        failures: failuresByReason(latest.values()),
      },
      cpu: {
        relay_us_per_connection: us(rampCpu, setUp),
        relay_us_per_published: us(cpu1 - cpu0, published),
        relay_us_per_delivered: us(cpu1 - cpu0, received),
        client_us_per_connection: us(rampOwnCpu, setUp),
        client_us_per_delivered: us(own1 - own0, received),
      },
      loadgen_cpu_percent: {
        ramp: pct(rampOwnCpu, rampSeconds),
        measure: pct(own1 - own0, elapsed),
      },
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
    await relay.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Asks the relay (run by gc_host.ts) for its memory after a GC; undefined when no answer came. */
async function memoryAfterGc(
  pid: number,
  log: string[],
): Promise<LoadgenResult["relay_memory_after_gc_mib"]> {
  const seen = log.length;
  Deno.kill(pid, "SIGUSR2");
  for (let i = 0; i < 100; i++) {
    const line = log.slice(seen).find((l) => l.startsWith("gc-host: "));
    if (line) {
      const m = JSON.parse(line.slice("gc-host: ".length));
      const mib = (b: number) => Math.round(b / 1024 / 1024 * 10) / 10;
      return { rss: mib(m.rss), heap_used: mib(m.heapUsed), external: mib(m.external) };
    }
    await sleep(100);
  }
  return undefined;
}

/** The workers' failure counts, added up by reason. */
function failuresByReason(reports: Iterable<WorkerReport>): Record<string, number> {
  const all: Record<string, number> = {};
  for (const r of reports) {
    for (const [reason, n] of Object.entries(r.failures)) all[reason] = (all[reason] ?? 0) + n;
  }
  return all;
}

/** Formats a result for people. */
export function formatResult(r: LoadgenResult): string {
  return [
    `subscribers requested ${r.subscribers}, sessions held ${r.held}, failed ${r.failed}`,
    `load: ${r.rate} groups/s of ${r.size} B for ${r.duration_s} s (${r.groups_published} groups)`,
    `relay RSS ${r.relay_rss_mib} MiB (before sessions ${r.relay_rss_base_mib} MiB) → ${r.rss_per_session_kib} KiB per session`,
    ...(r.relay_memory_after_gc_mib
      ? [
        `relay after GC: RSS ${r.relay_memory_after_gc_mib.rss} MiB, JS heap ${r.relay_memory_after_gc_mib.heap_used} MiB, external ${r.relay_memory_after_gc_mib.external} MiB`,
        `relay JS heap after GC before sessions ${r.relay_memory_base_after_gc_mib?.heap_used} MiB → ${r.heap_per_session_kib} KiB per session held`,
      ]
      : []),
    `relay CPU ${r.relay_cpu_percent}% of one core`,
    `delivery latency p50 ${r.latency_ms.p50} ms, p90 ${r.latency_ms.p90} ms, p99 ${r.latency_ms.p99} ms, max ${r.latency_ms.max} ms (${r.latency_ms.samples} samples)`,
    `loss ${r.loss_percent}%`,
    `admission: ${r.admission.per_s} sessions/s over ${r.admission.seconds} s (target ${
      r.admission.target_per_s || "unpaced"
    }); per second ${
      r.admission.per_second.join(" ")
    }; set-up p50 ${r.admission.setup_ms.p50} ms, p99 ${r.admission.setup_ms.p99} ms, max ${r.admission.setup_ms.max} ms; of which handshake p50 ${r.admission.handshake_ms.p50} ms, p99 ${r.admission.handshake_ms.p99} ms, max ${r.admission.handshake_ms.max} ms`,
    `  set-ups of 1 s or more by whole seconds taken (1 2 … 9 ≥10): handshake ${
      r.admission.slow_by_second.handshake.slice(1).join(" ")
    }; dial to subscribed ${r.admission.slow_by_second.setup.slice(1).join(" ")}`,
    ...Object.entries(r.admission.failures).map(([why, n]) => `  failed ${n}: ${why}`),
    `CPU (moq-bench terms): relay ${r.cpu.relay_us_per_connection} µs per connection, ${r.cpu.relay_us_per_published} µs per published message, ${r.cpu.relay_us_per_delivered} µs per delivered copy; subscribers' client ${r.cpu.client_us_per_connection} µs per connection, ${r.cpu.client_us_per_delivered} µs per delivered copy`,
    `UDP datagrams dropped for a full receive buffer: relay ${r.udp_drops.relay}, load generator ${r.udp_drops.loadgen}`,
    `load generator CPU ${r.loadgen_cpu_percent.ramp}% of one core while ramping, ${r.loadgen_cpu_percent.measure}% while measuring`,
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
