/**
 * An idle WebTransport session holds little buffer memory. Every read left
 * pending on a Deno QUIC stream through a default reader holds a 64 KiB
 * buffer until bytes arrive; a session's HTTP/3 control stream, its CONNECT
 * stream and each of its WT streams (a MoQ session's control stream) keep a
 * read pending for as long as they live. That was about 128 KiB per idle
 * WebTransport session at each end, plus 64 KiB per idle stream (377 MiB of
 * buffers for 2 000 relay sessions); they now read with BYOB readers into
 * small buffers. Measured here as ArrayBuffer memory after a full GC; the
 * loadgen figures are in docs/relay.md ("Sessions per node").
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { connectWebTransport } from "../../../src/transport/webtransport/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { StreamReader } from "../../../src/wire/mod.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";
import { startServer } from "../_server.ts";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

function externalAfterGc(): number {
  gc();
  gc();
  return Deno.memoryUsage().external;
}

const SESSIONS = 32;
const KiB = 1024;
// Both ends of a session are in this process: two control streams, two CONNECT streams and
// both halves of one stream, six pending reads. 16 KiB leaves room for QUIC's own buffers
// that V8 counts (a 64 KiB read buffer alone is four times that).
const BOUND_PER_SESSION = 16 * KiB;

interface Idle {
  readonly client: Session;
  readonly server: Session;
  readonly readers: StreamReader[];
}

// A session as MoQ leaves it once set up: the client opened a stream, both ends read it and wait.
async function idleSession(t: Awaited<ReturnType<typeof startServer>>): Promise<Idle> {
  const client = await connectWebTransport(t.url("/idle"), {
    protocols: VERSIONS,
    serverCertificateHashes: [t.cert.sha256],
  });
  const server = (await t.sessions.next())!;
  const ours = await client.openBidi();
  const w = ours.writable.getWriter();
  await w.write(new Uint8Array([7]));
  w.releaseLock();
  const theirs = (await server.acceptBidi())!;
  const serverReader = new StreamReader(theirs.readable);
  assert.equal(await serverReader.u8(), 7);
  const clientReader = new StreamReader(ours.readable);
  // Reads that wait for the rest of the session (they end when it closes).
  serverReader.u8().catch(() => {});
  clientReader.u8().catch(() => {});
  return { client, server, readers: [serverReader, clientReader] };
}

Deno.test("an idle WebTransport session and its idle stream hold little buffer memory at both ends", async () => {
  const t = await startServer();
  const sessions: Idle[] = [];
  try {
    sessions.push(await idleSession(t)); // first use of the listener and the client code
    const before = externalAfterGc();
    for (let i = 0; i < SESSIONS; i++) sessions.push(await idleSession(t));
    // Let every session's control and CONNECT stream reach its waiting read.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const perSession = (externalAfterGc() - before) / SESSIONS;
    console.log(
      `ArrayBuffer memory per idle session, both ends: ${(perSession / KiB).toFixed(1)} KiB`,
    );
    assert.ok(
      perSession <= BOUND_PER_SESSION,
      `an idle session holds ${(perSession / KiB).toFixed(0)} KiB of buffers`,
    );
  } finally {
    for (const s of sessions) s.client.close(0, "");
    await t.stop();
  }
});
