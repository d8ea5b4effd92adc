/// <reference lib="deno.worker" />
// A load-generator worker: holds many subscriber sessions on one track and
// reports delivery latency and counts to the main thread.
import { errorText } from "../../../src/error_text/mod.ts";
import { connect, type MoqSession, VERSIONS } from "../../../src/moq/mod.ts";
import { quicSession } from "../../../src/transport/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { connectWebTransport } from "../../../src/transport/mod.ts";
import { connectQMux } from "../../../src/transport/mod.ts";
import { LatencyHistogram } from "./latency.ts";
import { sentAt, type ToWorker, wallNow, type WorkerStart } from "./protocol.ts";

interface Sub {
  moq: MoqSession | undefined;
  held: boolean;
  joinedBeforeWindow: boolean;
  windowReceived: number;
}

const subs: Sub[] = [];
let connecting = 0;
let failed = 0;
let groups = 0;
let latency = new LatencyHistogram();
let windowFrom: number | undefined;
let windowTo: number | undefined;
let windowStarted = false;
let firstError: string | undefined;
let endpoint: Deno.QuicEndpoint | undefined;
let stopping = false;

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
  endpoint ??= new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const opts: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes?: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname: url.hostname,
    port: Number(url.port),
    alpnProtocols: ["moq-lite-05"],
    serverName: "localhost",
    endpoint,
    // As browsers grant (Chromium: 100); a subscriber that falls behind then
    // stalls the relay's sends and is skipped forward instead of queueing in QUIC.
    maxConcurrentUnidirectionalStreams: 100,
    maxIdleTimeout: 30_000,
    keepAliveInterval: 10_000,
    serverCertificateHashes: [{ algorithm: "sha-256", value: cfg.certSha256 }],
  };
  const conn = await Deno.connectQuic(opts);
  return quicSession(conn, { url });
}

async function runSub(cfg: WorkerStart, sub: Sub): Promise<void> {
  connecting++;
  try {
    const moq = await connect(await dial(cfg), { log: () => {} });
    sub.moq = moq;
    const s = moq.subscribe(cfg.path, cfg.track);
    await s.ready;
    connecting--;
    sub.held = true;
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
    if (!stopping) {
      failed++;
      firstError ??= "a held subscription ended (session closed or track ended)";
    }
  } catch (e) {
    if (!sub.held) connecting--;
    sub.held = false;
    failed++;
    firstError ??= errorText(e);
  }
}

async function start(cfg: WorkerStart): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, cfg.concurrency) }, async () => {
    while (next < cfg.sessions && !stopping) {
      const sub: Sub = {
        moq: undefined,
        held: false,
        joinedBeforeWindow: false,
        windowReceived: 0,
      };
      subs.push(sub);
      next++;
      // Wait for this session to be set up before dialing the next one on this lane.
      const running = runSub(cfg, sub);
      while (!sub.held && !stopping) {
        const settled = await Promise.race([
          running.then(() => true),
          new Promise((r) => setTimeout(() => r(false), 20)),
        ]);
        if (settled) break;
      }
    }
  });
  await Promise.all(lanes);
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
  self.postMessage({
    type: "report",
    held,
    connecting,
    failed,
    groups,
    latency: counts,
    windowReceived,
    windowSessions,
    ...(firstError ? { error: firstError } : {}),
  }, [counts.buffer]);
  groups = 0;
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
    for (const s of subs) s.moq?.close(0, "loadgen done");
    Promise.all(subs.map((s) => s.moq?.closed)).finally(() => {
      try {
        endpoint?.close();
      } catch {
        // closed
      }
      self.postMessage({ type: "stopped" });
    });
  }
};
