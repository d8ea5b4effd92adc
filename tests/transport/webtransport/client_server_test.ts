import assert from "node:assert/strict";
import {
  connectWebTransport,
  WebTransportRefusedError,
  WebTransportStreamError,
} from "../../../src/transport/webtransport/mod.ts";
import { SessionClosedError, StreamError } from "../../../src/transport/mod.ts";
import { connectQuicSession } from "../../../src/transport/quic/mod.ts";
import { readText, startServer, writeText } from "../_server.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";

Deno.test("our client and server: lite-05, streams with FIN both ways, datagrams, close code both ways", async () => {
  const t = await startServer();
  try {
    const client = await connectWebTransport(t.url("/live/room?jwt=abc"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
      origin: "https://app.example",
    });
    const server = await t.sessions.next();
    assert.ok(server);
    assert.equal(client.protocol, "moq-lite-05");
    assert.equal(client.transport, "webtransport");
    assert.equal(server.protocol, "moq-lite-05");
    assert.equal(server.url?.pathname, "/live/room");
    assert.equal(server.url?.searchParams.get("jwt"), "abc");
    const req = t.requests[0];
    assert.equal(req?.origin, "https://app.example");
    assert.deepEqual(req?.protocols, ["moq-lite-05", "moq-lite-04"]);

    // client bidi: echo with FIN both ways
    const bidi = await client.openBidi({ sendOrder: 5 });
    await writeText(bidi.writable, "ping");
    const sb = await server.acceptBidi();
    assert.ok(sb);
    assert.equal(await readText(sb.readable), "ping");
    await writeText(sb.writable, "pong");
    assert.equal(await readText(bidi.readable), "pong");

    // uni both ways
    const cu = await client.openUni();
    await writeText(cu.writable, "client uni");
    const su = await server.acceptUni();
    assert.equal(await readText(su!.readable), "client uni");
    const su2 = await server.openUni();
    await writeText(su2.writable, "server uni");
    const cu2 = await client.acceptUni();
    assert.equal(await readText(cu2!.readable), "server uni");

    // server-initiated bidi
    const sbidi = await server.openBidi();
    await writeText(sbidi.writable, "from server");
    const cb = await client.acceptBidi();
    assert.equal(await readText(cb!.readable), "from server");
    await writeText(cb!.writable, "reply");
    assert.equal(await readText(sbidi.readable), "reply");

    // datagrams both ways
    assert.ok((client.maxDatagramSize ?? 0) > 1000);
    await client.sendDatagram!(new TextEncoder().encode("dg-up"));
    assert.equal(new TextDecoder().decode(await server.readDatagram!()), "dg-up");
    await server.sendDatagram!(new TextEncoder().encode("dg-down"));
    assert.equal(new TextDecoder().decode(await client.readDatagram!()), "dg-down");

    client.close(4321, "client bye");
    assert.deepEqual(await server.closed, { code: 4321, reason: "client bye" });
    assert.deepEqual(await client.closed, { code: 4321, reason: "client bye" });
    assert.equal(await server.acceptBidi(), undefined);
  } finally {
    await t.stop();
  }
});

Deno.test("server close reaches the client with code and reason", async () => {
  const t = await startServer();
  try {
    const client = await connectWebTransport(t.url("/x"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const server = await t.sessions.next();
    server!.close(77, "server bye");
    assert.deepEqual(await client.closed, { code: 77, reason: "server bye" });
  } finally {
    await t.stop();
  }
});

Deno.test("protocol negotiation: lite-04 only, nothing offered, nothing acceptable", async () => {
  const t = await startServer();
  try {
    const c4 = await connectWebTransport(t.url("/a"), {
      serverCertificateHashes: [t.cert.sha256],
      protocols: ["moq-lite-04"],
    });
    assert.equal(c4.protocol, "moq-lite-04");
    assert.equal((await t.sessions.next())?.protocol, "moq-lite-04");
    c4.close(0, "");

    const none = await connectWebTransport(t.url("/b"), {
      serverCertificateHashes: [t.cert.sha256],
      protocols: [],
    });
    assert.equal(none.protocol, "moq-lite-04", "a session offering no protocol is lite-04");
    assert.equal((await t.sessions.next())?.protocol, "moq-lite-04");
    none.close(0, "");

    await assert.rejects(
      connectWebTransport(t.url("/c"), {
        serverCertificateHashes: [t.cert.sha256],
        protocols: ["moqt-20"],
      }),
      (err: unknown) => err instanceof WebTransportRefusedError && err.status === 400,
    );
  } finally {
    await t.stop();
  }
});

Deno.test("admission refusals surface as typed errors with the status, before any session", async () => {
  const t = await startServer({
    admitWebTransport: (req) => {
      if (req.path !== "/live") return { status: 404, reason: "no such path" };
      if (req.origin !== undefined && req.origin !== "https://good.example") return { status: 403 };
      if (req.query.get("jwt") !== "ok") return { status: 401, reason: "bad token" };
      return { status: 200, protocol: "moq-lite-05" };
    },
  });
  try {
    const opts = { protocols: VERSIONS, serverCertificateHashes: [t.cert.sha256] };
    const statusOf = async (url: URL, origin?: string): Promise<number> => {
      try {
        const s = await connectWebTransport(url, origin ? { ...opts, origin } : opts);
        s.close(0, "");
        return 200;
      } catch (err) {
        assert.ok(err instanceof WebTransportRefusedError, String(err));
        return err.status;
      }
    };
    assert.equal(await statusOf(t.url("/nope?jwt=ok")), 404);
    assert.equal(await statusOf(t.url("/live?jwt=ok"), "https://evil.example"), 403);
    assert.equal(await statusOf(t.url("/live?jwt=bad")), 401);
    await assert.rejects(
      connectWebTransport(t.url("/live?jwt=bad"), opts),
      /401: bad token/,
    );
    assert.equal(await statusOf(t.url("/live?jwt=ok"), "https://good.example"), 200);
    const first = await t.sessions.next();
    assert.equal(first?.url?.pathname, "/live", "only the admitted request became a session");
  } finally {
    await t.stop();
  }
});

Deno.test("the same UDP port serves native QUIC moq-lite by ALPN", async () => {
  const t = await startServer();
  try {
    const quic = await connectQuicSession(new URL(`moqt://localhost:${t.port}/`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: t.cert.sha256 }],
    });
    const server = await t.sessions.next();
    assert.equal(server?.transport, "quic");
    assert.equal(server?.protocol, "moq-lite-05");
    assert.equal(quic.protocol, "moq-lite-05");
    const wt = await connectWebTransport(t.url("/x"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const wtServer = await t.sessions.next();
    assert.equal(wtServer?.transport, "webtransport");
    const u = await quic.openUni();
    await writeText(u.writable, "native");
    assert.equal(await readText((await server!.acceptUni())!.readable), "native");
    quic.close(0, "");
    wt.close(0, "");
    await wt.closed;
  } finally {
    await t.stop();
  }
});

Deno.test("client verifies the server with a CA file, and refuses an unknown certificate", async () => {
  const t = await startServer();
  try {
    const s = await connectWebTransport(t.url("/ca"), {
      protocols: VERSIONS,
      caCerts: [t.cert.certPem],
    });
    assert.equal(s.protocol, "moq-lite-05");
    s.close(0, "");
    await s.closed;
    await assert.rejects(
      connectWebTransport(t.url("/ca"), { protocols: VERSIONS }),
      /certificate|UnknownIssuer/i,
    );
  } finally {
    await t.stop();
  }
});

Deno.test("stopping the listener closes WebTransport sessions with a close capsule", async () => {
  const t = await startServer();
  const client = await connectWebTransport(t.url("/stop"), {
    protocols: VERSIONS,
    serverCertificateHashes: [t.cert.sha256],
  });
  await t.sessions.next();
  await t.server.stop();
  assert.deepEqual(await client.closed, { code: 0, reason: "server stopping" });
});

Deno.test("client gives up after its timeout when the server never answers the CONNECT", async () => {
  let release: (() => void) | undefined;
  const t = await startServer({
    admitWebTransport: () =>
      new Promise((resolve) => {
        release = () => resolve({ status: 404 });
      }),
  });
  try {
    await assert.rejects(
      connectWebTransport(t.url("/slow"), {
        protocols: VERSIONS,
        serverCertificateHashes: [t.cert.sha256],
        timeoutMs: 200,
      }),
      /timed out/,
    );
  } finally {
    await t.stop();
    release?.();
  }
});

Deno.test("a peer's STOP_SENDING on a WebTransport stream is a StreamError with the WT code", async () => {
  const t = await startServer();
  try {
    const client = await connectWebTransport(t.url("/errors"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const server = (await t.sessions.next())!;
    const bidi = await client.openBidi();
    const w = bidi.writable.getWriter();
    await w.write(new TextEncoder().encode("x"));
    const peer = (await server.acceptBidi())!;
    await peer.readable.cancel(); // STOP_SENDING
    let rejected: unknown;
    for (let i = 0; i < 500 && rejected === undefined; i++) {
      await w.write(new Uint8Array(1000)).catch((e: unknown) => rejected = e);
      await new Promise((r) => setTimeout(r, 2));
    }
    const err = client.translateError(rejected);
    assert.ok(err instanceof WebTransportStreamError, String(err));
    assert.ok(err instanceof StreamError);
    assert.equal(err.code, "stream_stopped");
    assert.equal(err.wireCode, 0);
    client.close(0, "");
    await assert.rejects(client.openUni(), SessionClosedError);
  } finally {
    await t.stop();
  }
});

// Bytes 0, 1, ..., 250, 0, 1, ...: a pattern that shows a lost, repeated or reordered chunk.
function pattern(from: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (from + i) % 251;
  return out;
}

async function writePattern(writable: WritableStream<Uint8Array>, total: number): Promise<void> {
  const w = writable.getWriter();
  for (let at = 0; at < total; at += 100_000) {
    await w.write(pattern(at, Math.min(100_000, total - at)));
  }
  await w.close();
}

Deno.test("WebTransport streams carry megabytes intact to BYOB, default and small-buffer reads; a waiting read ends with the session", async () => {
  const t = await startServer();
  try {
    const client = await connectWebTransport(t.url("/bulk"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const server = (await t.sessions.next())!;
    const total = 5 * 1024 * 1024 + 7;

    // Peer-opened uni stream, read with BYOB reads into 64 KiB buffers (as the moq layer does).
    const uni = await client.openUni();
    const sending = writePattern(uni.writable, total);
    const su = (await server.acceptUni())!;
    const byob = su.readable.getReader({ mode: "byob" });
    let got = 0;
    for (;;) {
      const { value, done } = await byob.read(new Uint8Array(64 * 1024));
      if (done) break;
      assert.deepEqual(value, pattern(got, value.length), `bytes from ${got}`);
      got += value.length;
    }
    await sending;
    assert.equal(got, total);

    // Peer-opened bidi stream, read with default reads.
    const bidi = await client.openBidi();
    const sendingBidi = writePattern(bidi.writable, total);
    const sb = (await server.acceptBidi())!;
    const reader = sb.readable.getReader();
    got = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      assert.deepEqual(value, pattern(got, value.length), `bytes from ${got}`);
      got += value.length;
    }
    await sendingBidi;
    assert.equal(got, total);

    // Our own bidi stream's answer, read 7 bytes at a time.
    const answer = writePattern(sb.writable, 100_003);
    const small = bidi.readable.getReader({ mode: "byob" });
    got = 0;
    for (;;) {
      const { value, done } = await small.read(new Uint8Array(7));
      if (done) break;
      assert.ok(value.length <= 7);
      assert.deepEqual(value, pattern(got, value.length), `bytes from ${got}`);
      got += value.length;
    }
    await answer;
    assert.equal(got, 100_003);

    // A BYOB read waiting when the connection goes fails with the transport's neutral error.
    const last = await client.openUni();
    const lw = last.writable.getWriter();
    await lw.write(new Uint8Array([1]));
    const sl = (await server.acceptUni())!;
    const lr = sl.readable.getReader({ mode: "byob" });
    assert.equal((await lr.read(new Uint8Array(16))).value?.length, 1);
    const pending = lr.read(new Uint8Array(16)).then(() => undefined, (e: unknown) => e);
    client.close(0, "");
    const err = await pending;
    assert.ok(err instanceof SessionClosedError, String(err));
  } finally {
    await t.stop();
  }
});
