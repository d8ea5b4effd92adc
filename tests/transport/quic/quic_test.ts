import assert from "node:assert/strict";
import {
  connectQuicSession,
  listenQuic,
  QuicConnectError,
  quicSession,
} from "../../../src/transport/quic/mod.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";
import { testCertificate } from "../../support/certs.ts";

const cert = await testCertificate();
const pin = {
  alpn: VERSIONS,
  serverCertificateHashes: [{ algorithm: "sha-256" as const, value: cert.sha256 }],
};

Deno.test("quic session: streams both ways, close code and reason reach the peer", async () => {
  const listener = listenQuic({ alpn: VERSIONS, cert: cert.certPem, key: cert.keyPem });
  const it = listener[Symbol.asyncIterator]();
  const serverP = it.next();
  const client = await connectQuicSession(
    new URL(`moqt://127.0.0.1:${listener.addr.port}/room?jwt=t`),
    pin,
  );
  const server = (await serverP).value!;
  assert.equal(client.transport, "quic");
  assert.equal(client.protocol, "moq-lite-05");
  assert.equal(server.protocol, "moq-lite-05");
  assert.equal(client.url?.searchParams.get("jwt"), "t");
  assert.equal(server.url, undefined);
  assert.match(server.remote, /^127\.0\.0\.1:\d+$/);

  // Bidi echo.
  const bidi = await client.openBidi({ sendOrder: 5 });
  const w = bidi.writable.getWriter();
  await w.write(new TextEncoder().encode("ping"));
  await w.close();
  const peer = (await server.acceptBidi())!;
  const text = await new Response(peer.readable).text();
  assert.equal(text, "ping");
  const pw = peer.writable.getWriter();
  await pw.write(new TextEncoder().encode("pong"));
  await pw.close();
  assert.equal(await new Response(bidi.readable).text(), "pong");

  // Uni the other way.
  const uni = await server.openUni();
  const uw = uni.writable.getWriter();
  await uw.write(new Uint8Array([1, 2, 3]));
  await uw.close();
  const recv = (await client.acceptUni())!;
  assert.deepEqual(
    new Uint8Array(await new Response(recv.readable).arrayBuffer()),
    new Uint8Array([1, 2, 3]),
  );

  server.close(42, "done");
  server.close(43, "again"); // idempotent
  assert.deepEqual(await client.closed, { code: 42, reason: "done" });
  assert.equal((await server.closed).code, 42);
  assert.equal(await client.acceptBidi(), undefined);
  assert.equal(await client.acceptUni(), undefined);
  listener.stop();
});

Deno.test("quic dial: CA file works; wrong pin, insecure, bad scheme and ALPN fail clearly", async () => {
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: ["moq-lite-04"] });
  const accepting = (async () => {
    for await (const s of listener) s.close(0, "");
  })();
  const url = new URL(`moqt://localhost:${listener.addr.port}/`);
  const viaCa = await connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
    alpn: VERSIONS,
    caCerts: [cert.certPem],
    serverName: "localhost",
  });
  assert.equal(viaCa.protocol, "moq-lite-04");
  await viaCa.closed;
  await assert.rejects(
    connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(32) }],
    }),
    (e) => e instanceof QuicConnectError && e.code === "tls_failed",
  );
  await assert.rejects(connectQuicSession(url, { alpn: VERSIONS, insecure: true }), TypeError);
  await assert.rejects(
    connectQuicSession(new URL("http://localhost:1/"), pin),
    (e) => e instanceof QuicConnectError && e.code === "invalid_url",
  );
  await assert.rejects(
    connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
      ...pin,
      alpn: ["moq-lite-05"],
    }),
    QuicConnectError,
  );
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(
    connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
      ...pin,
      signal: ac.signal,
    }),
  );
  listener.stop();
  await accepting;
});

Deno.test("quicSession wraps a connection accepted by another listener", async () => {
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const l = endpoint.listen({
    cert: cert.certPem,
    key: cert.keyPem,
    alpnProtocols: ["moq-lite-05", "h3"],
  });
  const serverP = (async () => {
    const conn = await (await l.incoming()).accept();
    return quicSession(conn);
  })();
  const client = await connectQuicSession(new URL(`moqt://127.0.0.1:${endpoint.addr.port}/`), pin);
  const server = await serverP;
  assert.equal(server.protocol, "moq-lite-05");
  client.close(0, "");
  assert.equal((await server.closed).code, 0);
  endpoint.close();
});

Deno.test("an abandoned quic dial stops its handshake at once instead of retrying until idle", async () => {
  // Something takes UDP packets on this port and never answers: a handshake would go on
  // retransmitting its Initial until the idle timeout.
  const hole = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  let packets = 0;
  const draining = (async () => {
    try {
      for (;;) {
        await hole.receive();
        packets++;
      }
    } catch {
      // closed at the end of the test
    }
  })();
  const port = (hole.addr as Deno.NetAddr).port;
  const started = performance.now();
  await assert.rejects(
    connectQuicSession(new URL(`moqt://127.0.0.1:${port}/`), {
      ...pin,
      maxIdleTimeout: 30_000,
      signal: AbortSignal.timeout(300),
    }),
    (e: unknown) => e instanceof QuicConnectError && e.code === "cancelled",
  );
  assert.ok(performance.now() - started < 1000, "the dial rejects when its signal aborts");
  await new Promise((r) => setTimeout(r, 200));
  const atAbort = packets;
  assert.ok(atAbort >= 1, "the dial reached the port");
  // Retransmissions back off from ~1 s; in 2.5 s an abandoned handshake would send at least two.
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(packets - atAbort, 0, "no packet after the dial was abandoned");
  hole.close();
  await draining;
});
