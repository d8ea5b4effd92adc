/// <reference lib="deno.worker" />
// A load-generator worker: holds many subscriber sessions on one track and
// reports delivery latency and counts to the main thread.
import { errorText } from "../../../src/error_text/mod.ts";
import { connect, type MoqSession, VERSIONS } from "../../../src/moq/mod.ts";
import { quicSession, raiseUdpReceiveBuffer } from "../../../src/transport/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { connectWebTransport } from "../../../src/transport/mod.ts";
import { connectQMux } from "../../../src/transport/mod.ts";
import { LatencyHistogram } from "./latency.ts";
import { RAW_ALPN } from "./raw_server.ts";
import {
  failureReason,
  MAX_FAILURE_REASONS,
  sentAt,
  type ToWorker,
  wallNow,
  type WorkerStart,
} from "./protocol.ts";

interface Sub {
  moq: MoqSession | undefined;
  /** The raw baseline's connection. */
  conn?: Deno.QuicConn;
  held: boolean;
  joinedBeforeWindow: boolean;
  windowReceived: number;
}

const subs: Sub[] = [];
let connecting = 0;
let failed = 0;
let groups = 0;
let latency = new LatencyHistogram();
let setups = 0;
let setupLatency = new LatencyHistogram();
let handshakeLatency = new LatencyHistogram();
let setupMaxMs = 0;
let handshakeMaxMs = 0;

// How late a 10 ms timer fires: a worker whose loop is busy (reading a burst of group streams)
// resolves set-ups late too, so a slow set-up is the load generator's when this is long.
const LAG_PROBE_MS = 10;
let loopLagMaxMs = 0;
let lagProbeDue = performance.now() + LAG_PROBE_MS;
const lagProbe = setInterval(() => {
  const now = performance.now();
  loopLagMaxMs = Math.max(loopLagMaxMs, now - lagProbeDue);
  lagProbeDue = now + LAG_PROBE_MS;
}, LAG_PROBE_MS);
const failures: Record<string, number> = {};
let windowFrom: number | undefined;
let windowTo: number | undefined;
let windowStarted = false;
let firstError: string | undefined;
let endpoint: Deno.QuicEndpoint | undefined;
let stopping = false;

// Records a set-up that finished (dial to subscribed) and its handshake part (dial to connected).
function recordSetup(setupMs: number, handshakeMs: number): void {
  setups++;
  setupLatency.record(setupMs);
  handshakeLatency.record(handshakeMs);
  setupMaxMs = Math.max(setupMaxMs, setupMs);
  handshakeMaxMs = Math.max(handshakeMaxMs, handshakeMs);
}

async function dial(cfg: WorkerStart): Promise<Session> {
  const url = new URL(cfg.url);
  if (cfg.transport === "websocket") {
    // As browsers grant (@moq/qmux: 100 uni streams).
    return await connectQMux(url, {
      protocols: VERSIONS,
      caCerts: [cfg.certPem],
      params: { initialMaxStreamsUni: 100 },
    });
  }
  if (cfg.transport === "webtransport") {
    return await connectWebTransport(url, {
      protocols: VERSIONS,
      serverCertificateHashes: [cfg.certSha256],
      maxConcurrentUnidirectionalStreams: 100,
    });
  }
  return quicSession(await dialQuic(cfg, url, ["moq-lite-05"]), { url });
}

async function dialQuic(cfg: WorkerStart, url: URL, alpn: string[]): Promise<Deno.QuicConn> {
  if (endpoint === undefined) {
    endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
    // The subscribers' side of a burst: thousands of group streams arrive at this one socket.
    if (cfg.udpReceiveBuffer) raiseUdpReceiveBuffer(endpoint.addr.port);
  }
  const opts: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes?: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname: url.hostname,
    port: Number(url.port),
    alpnProtocols: alpn,
    serverName: "localhost",
    endpoint,
    // As browsers grant (Chromium: 100); a subscriber that falls behind then
    // stalls the relay's sends and is skipped forward instead of queueing in QUIC.
    maxConcurrentUnidirectionalStreams: 100,
    maxIdleTimeout: 30_000,
    keepAliveInterval: 10_000,
    serverCertificateHashes: [{ algorithm: "sha-256", value: cfg.certSha256 }],
  };
  return await Deno.connectQuic(opts);
}

// One group of the raw baseline: a uni stream of bytes (send time, sequence, filler).
async function readRawGroup(stream: ReadableStream<Uint8Array>, sub: Sub): Promise<void> {
  const head = new Uint8Array(16);
  let have = 0;
  for await (const chunk of stream) {
    if (have < 16) {
      const n = Math.min(16 - have, chunk.byteLength);
      head.set(chunk.subarray(0, n), have);
      have += n;
    }
  }
  const now = wallNow();
  if (have < 16) return;
  groups++;
  const view = new DataView(head.buffer);
  const seq = view.getFloat64(8);
  if (
    windowFrom !== undefined && seq >= windowFrom && (windowTo === undefined || seq <= windowTo)
  ) {
    sub.windowReceived++;
    latency.record(now - view.getFloat64(0));
  }
}

// Holds one raw-baseline connection: held once the handshake is done.
async function runRaw(cfg: WorkerStart, sub: Sub, settled: () => void): Promise<void> {
  connecting++;
  const dialedAt = performance.now();
  try {
    const conn = await dialQuic(cfg, new URL(cfg.url), [RAW_ALPN]);
    sub.conn = conn;
    connecting--;
    sub.held = true;
    const ms = performance.now() - dialedAt;
    recordSetup(ms, ms);
    settled();
    sub.joinedBeforeWindow = !windowStarted;
    for await (const stream of conn.incomingUnidirectionalStreams) {
      readRawGroup(stream, sub).catch(() => {});
    }
    sub.held = false;
    if (!stopping) fail("a held connection ended");
  } catch (e) {
    if (!sub.held) connecting--;
    const wasHeld = sub.held;
    sub.held = false;
    if (!stopping || !wasHeld) fail(errorText(e));
    if (!wasHeld) settled();
  }
}

// Counts one failure under its reason; past MAX_FAILURE_REASONS distinct ones, under "other".
function fail(text: string): void {
  failed++;
  firstError ??= text;
  let reason = failureReason(text);
  if (!(reason in failures) && Object.keys(failures).length >= MAX_FAILURE_REASONS) {
    reason = "other";
  }
  failures[reason] = (failures[reason] ?? 0) + 1;
}

// Holds one session until it ends; `settled` is called once it is subscribed or has failed.
async function runSub(cfg: WorkerStart, sub: Sub, settled: () => void): Promise<void> {
  connecting++;
  const dialedAt = performance.now();
  try {
    const session = await dial(cfg);
    const handshakeMs = performance.now() - dialedAt;
    const moq = await connect(session, { log: () => {} });
    sub.moq = moq;
    const s = moq.subscribe(cfg.path, cfg.track);
    await s.ready;
    connecting--;
    sub.held = true;
    recordSetup(performance.now() - dialedAt, handshakeMs);
    settled();
    sub.joinedBeforeWindow = !windowStarted;
    for await (const g of s) {
      const now = wallNow();
      groups++;
      const f = g.frames[0];
      if (
        windowFrom !== undefined && g.sequence >= windowFrom &&
        (windowTo === undefined || g.sequence <= windowTo)
      ) {
        sub.windowReceived++;
        if (f) latency.record(now - sentAt(f));
      }
    }
    sub.held = false;
    if (!stopping) fail("a held subscription ended (session closed or track ended)");
  } catch (e) {
    if (!sub.held) connecting--;
    const wasHeld = sub.held;
    sub.held = false;
    if (!stopping || !wasHeld) fail(errorText(e));
    if (!wasHeld) settled();
  }
}

async function start(cfg: WorkerStart): Promise<void> {
  let started = 0;
  let inFlight = 0;
  let wake = Promise.withResolvers<void>();
  const launch = () => {
    const sub: Sub = { moq: undefined, held: false, joinedBeforeWindow: false, windowReceived: 0 };
    subs.push(sub);
    started++;
    inFlight++;
    // A dial is in flight until its session is subscribed or has failed.
    void (cfg.raw ? runRaw : runSub)(cfg, sub, () => {
      inFlight--;
      const w = wake;
      wake = Promise.withResolvers<void>();
      w.resolve();
    });
  };
  const t0 = performance.now();
  while (started < cfg.sessions && !stopping) {
    if (inFlight >= Math.max(1, cfg.concurrency)) {
      await wake.promise;
      continue;
    }
    if (cfg.rampPerSecond > 0) {
      // Paced: dial number k starts k / rate seconds after the first (late ones catch up).
      const due = t0 + (started / cfg.rampPerSecond) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, Math.max(1, wait)));
      if (stopping) break;
    }
    launch();
  }
}

const timer = setInterval(() => {
  let held = 0;
  let windowReceived = 0;
  let windowSessions = 0;
  for (const s of subs) {
    if (s.held) held++;
    if (s.held && s.joinedBeforeWindow) {
      windowSessions++;
      windowReceived += s.windowReceived;
    }
  }
  const counts = latency.counts;
  latency = new LatencyHistogram();
  const setupCounts = setupLatency.counts;
  setupLatency = new LatencyHistogram();
  const handshakeCounts = handshakeLatency.counts;
  handshakeLatency = new LatencyHistogram();
  self.postMessage({
    type: "report",
    held,
    connecting,
    failed,
    groups,
    latency: counts,
    windowReceived,
    windowSessions,
    setups,
    setupLatency: setupCounts,
    handshakeLatency: handshakeCounts,
    setupMaxMs,
    handshakeMaxMs,
    loopLagMaxMs,
    ports: endpoint ? [endpoint.addr.port] : [],
    failures: { ...failures },
    ...(firstError ? { error: firstError } : {}),
  }, [counts.buffer, setupCounts.buffer, handshakeCounts.buffer]);
  groups = 0;
  setups = 0;
  setupMaxMs = 0;
  handshakeMaxMs = 0;
  loopLagMaxMs = 0;
}, 1000);

self.onmessage = (e: MessageEvent<ToWorker>) => {
  const m = e.data;
  if (m.type === "start") {
    start(m).catch((err) => (firstError ??= String(err)));
  } else if (m.type === "window") {
    windowFrom = m.from;
    windowTo = m.to;
    windowStarted = true;
  } else if (m.type === "stop") {
    stopping = true;
    clearInterval(timer);
    clearInterval(lagProbe);
    for (const s of subs) {
      s.moq?.close(0, "loadgen done");
      try {
        s.conn?.close({ closeCode: 0, reason: "loadgen done" });
      } catch {
        // already closed
      }
    }
    Promise.all(subs.map((s) => s.moq?.closed ?? s.conn?.closed.catch(() => {}))).finally(() => {
      try {
        endpoint?.close();
      } catch {
        // closed
      }
      self.postMessage({ type: "stopped" });
    });
  }
};
