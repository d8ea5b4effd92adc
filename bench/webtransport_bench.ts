// Our WebTransport (HTTP/3 over Deno raw QUIC) next to native QUIC, same listener, same run:
// bytes through one stream, and one-frame unidirectional streams (what moq-lite opens per group).
// Run: deno bench --allow-all bench/webtransport_bench.ts
// MB/s = MiB per iteration / time per iteration; streams/s = streams per iteration / time.
import { generateDevCertificate } from "../src/certs/mod.ts";
import { listen } from "../src/transport/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import type { Session } from "../src/transport/mod.ts";
import { connectWebTransport } from "../src/transport/mod.ts";
import { VERSIONS } from "../src/moq/mod.ts";

const CHUNK = 64 * 1024;
const CHUNKS = 64; // 4 MiB per stream
const STREAMS = 100; // one-frame streams per iteration
const FRAME = new Uint8Array(100);

const cert = await generateDevCertificate();
/** Server side: counts finished uni streams per transport and wakes the waiting iteration. */
const finished = { quic: 0, webtransport: 0, websocket: 0 };
const waiters: { kind: Session["transport"]; count: number; resolve: () => void }[] = [];
function notify(kind: Session["transport"]): void {
  finished[kind]++;
  for (const w of waiters.splice(0)) {
    if (w.kind === kind && finished[kind] >= w.count) w.resolve();
    else waiters.push(w);
  }
}
function until(kind: Session["transport"], count: number): Promise<void> {
  if (finished[kind] >= count) return Promise.resolve();
  return new Promise((resolve) => waiters.push({ kind, count, resolve }));
}
async function drain(session: Session): Promise<void> {
  for (;;) {
    const s = await session.acceptUni();
    if (!s) return;
    (async () => {
      const r = s.readable.getReader();
      while (!(await r.read()).done) { /* discard */ }
      notify(session.transport);
    })().catch(() => {});
  }
}

const server = await listen({
  protocols: VERSIONS,
  certPem: cert.certPem,
  keyPem: cert.keyPem,
  onSession: (s) => void drain(s),
});
const port = server.addr.port;
const wt = await connectWebTransport(new URL(`https://localhost:${port}/bench`), {
  protocols: VERSIONS,
  serverCertificateHashes: [cert.sha256],
});
const quic = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
  alpn: VERSIONS,
  serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
});
const payload = new Uint8Array(CHUNK).fill(7);

async function oneStream(session: Session): Promise<void> {
  const target = finished[session.transport] + 1;
  const s = await session.openUni();
  const w = s.writable.getWriter();
  for (let i = 0; i < CHUNKS; i++) await w.write(payload);
  await w.close();
  await until(session.transport, target);
}

async function manyStreams(session: Session): Promise<void> {
  const target = finished[session.transport] + STREAMS;
  await Promise.all(
    Array.from({ length: STREAMS }, async () => {
      const s = await session.openUni();
      const w = s.writable.getWriter();
      await w.write(FRAME);
      await w.close();
    }),
  );
  await until(session.transport, target);
}

Deno.bench(
  "native QUIC: 4 MiB on one stream",
  { group: "one stream", baseline: true },
  async () => {
    await oneStream(quic);
  },
);
Deno.bench("WebTransport: 4 MiB on one stream", { group: "one stream" }, async () => {
  await oneStream(wt);
});
Deno.bench(
  "native QUIC: 100 one-frame uni streams",
  { group: "streams", baseline: true },
  async () => {
    await manyStreams(quic);
  },
);
Deno.bench("WebTransport: 100 one-frame uni streams", { group: "streams" }, async () => {
  await manyStreams(wt);
});

globalThis.addEventListener("unload", () => {
  wt.close(0, "");
  quic.close(0, "");
  void server.stop();
});
