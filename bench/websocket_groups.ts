/**
 * moq-lite-05 over QMux over WebSocket next to WebTransport and native QUIC,
 * in one run: our moq layer on each transport (server publishes one-frame
 * groups, client subscribes), served the way sluice serves them (QUIC and
 * WebTransport on one UDP port, WebSocket upgrades on the same TCP port).
 *
 *   deno run -A bench/websocket_groups.ts [--groups N] [--size BYTES] [--window W]
 *     [--latency-groups N] [--interval MS] [--draft qmux-02]
 *
 * Throughput: `--groups` groups with at most `--window` unread. Latency: one
 * group every `--interval` ms, send to delivery, p50 and p99. Both
 * directions: the server publishing (as a relay or the funnel's listener
 * does toward subscribers) and the client publishing (as the funnel does
 * toward its relay). Prints each figure and its ratio to native QUIC in the
 * same direction, and for scale Deno's own WebSocket over the same TLS port
 * sending one bare message per group (no QMux, no moq).
 */
import { generateDevCertificate } from "../src/certs/mod.ts";
import { startHttpServer } from "../src/http/mod.ts";
import { bindSamePort, qmuxUpgrade } from "../src/listeners/mod.ts";
import { VERSIONS } from "../src/moq/mod.ts";
import { connectQMux, type QMuxDraft } from "../src/transport/mod.ts";
import { admitAny, connectWebTransport, listen } from "../src/transport/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import type { Session } from "../src/transport/mod.ts";
import {
  type Figures,
  type Latency,
  moqGroups,
  moqLatency,
  type Publisher,
} from "./support/moq_groups.ts";
import { benchArgs } from "./support/args.ts";

const { values } = benchArgs({
  groups: { type: "string", default: "10000" },
  size: { type: "string", default: "100" },
  window: { type: "string", default: "8" },
  "latency-groups": { type: "string", default: "500" },
  interval: { type: "string", default: "5" },
  draft: { type: "string", default: "qmux-02" },
});

type Kind = "quic" | "webtransport" | "websocket";

const cert = await generateDevCertificate();
const incoming: Session[] = [];
let wakeServer: (() => void) | undefined;
const onSession = (s: Session) => {
  incoming.push(s);
  wakeServer?.();
};
const upgrade = qmuxUpgrade({ protocols: VERSIONS, admit: admitAny(VERSIONS), onSession });
const { listener, server } = await bindSamePort(0, (port) =>
  listen({
    hostname: "127.0.0.1",
    port,
    certPem: cert.certPem,
    keyPem: cert.keyPem,
    protocols: VERSIONS,
    onSession,
  }), (port) =>
  startHttpServer(upgrade, {
    hostname: "127.0.0.1",
    port,
    tls: { cert: cert.certPem, key: cert.keyPem },
  }));
const port = listener.addr.port;
const draft = values.draft as QMuxDraft;

// Bare WebSocket messages for scale: the server side echoes nothing, it only counts.
let bareReceived = 0;
let wakeBare: (() => void) | undefined;
const bare = await startHttpServer((req) => {
  const { socket, response } = Deno.upgradeWebSocket(req);
  socket.onmessage = () => {
    bareReceived++;
    wakeBare?.();
  };
  return response;
}, { hostname: "127.0.0.1", port: 0, tls: { cert: cert.certPem, key: cert.keyPem } });

/** Bare wss:// messages of `size` bytes, at most `window` not yet received: messages/s. */
async function bareThroughput(count: number, size: number, window: number): Promise<number> {
  const client = Deno.createHttpClient({ caCerts: [cert.certPem] });
  const ws = new WebSocket(`wss://localhost:${bare.addr.port}/`, { client } as WebSocketOptions);
  await new Promise((r) => (ws.onopen = r));
  const payload = new Uint8Array(size).fill(7);
  bareReceived = 0;
  const start = performance.now();
  for (let n = 0; n < count; n++) {
    while (n - bareReceived >= window) await new Promise<void>((r) => (wakeBare = r));
    ws.send(payload);
  }
  while (bareReceived < count) await new Promise<void>((r) => (wakeBare = r));
  const seconds = (performance.now() - start) / 1000;
  ws.close();
  client.close();
  return count / seconds;
}

async function nextServerSession(): Promise<Session> {
  while (incoming.length === 0) await new Promise<void>((r) => (wakeServer = r));
  return incoming.shift()!;
}

async function pair(kind: Kind): Promise<{ client: Session; server: Session }> {
  const client = kind === "quic"
    ? await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      alpn: ["moq-lite-05"],
    })
    : kind === "webtransport"
    ? await connectWebTransport(new URL(`https://localhost:${port}/bench`), {
      serverCertificateHashes: [cert.sha256],
      protocols: ["moq-lite-05"],
    })
    : await connectQMux(new URL(`wss://localhost:${port}/bench`), {
      protocols: ["moq-lite-05"],
      drafts: [draft],
      caCerts: [cert.certPem],
    });
  return { client, server: await nextServerSession() };
}

async function throughput(
  kind: Kind,
  from: Publisher,
  count: number,
  size: number,
  window: number,
) {
  const { client, server } = await pair(kind);
  const figures = await moqGroups(client, server, count, size, window, from);
  await client.closed;
  return figures;
}

async function latency(kind: Kind, from: Publisher, count: number, size: number, every: number) {
  const { client, server } = await pair(kind);
  const figures = await moqLatency(client, server, count, size, every, from);
  await client.closed;
  return figures;
}

const groups = Number(values.groups);
const size = Number(values.size);
const window = Number(values.window);
const latencyGroups = Number(values["latency-groups"]);
const interval = Number(values.interval);
const kinds: Kind[] = ["quic", "webtransport", "websocket"];
const names: Record<Kind, string> = {
  quic: "native QUIC",
  webtransport: "WebTransport",
  websocket: `WebSocket (${draft})`,
};

for (const kind of kinds) await throughput(kind, "server", 3000, size, window); // warm-up (JIT)
await bareThroughput(3000, size, window);
console.log(
  `${groups} one-frame moq-lite-05 groups of ${size} B, window ${window}; latency over ` +
    `${latencyGroups} groups, one every ${interval} ms:`,
);
for (const from of ["server", "client"] as const) {
  const rates = new Map<Kind, Figures>();
  const delays = new Map<Kind, Latency>();
  for (const kind of kinds) rates.set(kind, await throughput(kind, from, groups, size, window));
  for (const kind of kinds) {
    delays.set(kind, await latency(kind, from, latencyGroups, size, interval));
  }
  const quicRate = rates.get("quic")!.perSecond;
  const quicDelay = delays.get("quic")!;
  console.log(
    `\n${from} publishes    ${"groups/s".padStart(9)} ${"ratio".padStart(6)}  ${
      "p50 ms".padStart(7)
    } ${"ratio".padStart(6)}  ${"p99 ms".padStart(7)} ${"ratio".padStart(6)}`,
  );
  for (const kind of kinds) {
    const r = rates.get(kind)!;
    const d = delays.get(kind)!;
    console.log(
      `${names[kind].padEnd(22)} ${r.perSecond.toFixed(0).padStart(9)} ${
        (r.perSecond / quicRate).toFixed(2).padStart(6)
      }  ${d.p50.toFixed(1).padStart(7)} ${(d.p50 / quicDelay.p50).toFixed(2).padStart(6)}  ${
        d.p99.toFixed(1).padStart(7)
      } ${(d.p99 / quicDelay.p99).toFixed(2).padStart(6)}`,
    );
  }
}
const bareRate = await bareThroughput(groups, size, window);
console.log(
  `\nbare wss:// messages, client to server, one ${size} B message per group ` +
    `(Deno's WebSocket alone): ${bareRate.toFixed(0)}/s`,
);
await listener.stop();
await server.stop();
await bare.stop();
