// An ordered subscription's group streams go one after another, not side by
// side. Deno's QUIC (quinn) shares the link round-robin between streams of one
// send order, and groups written whole all took the same order, so a backlog of
// large records reached a subscriber as every stream begun and none finished
// until nearly all were. `@moq/net` ages a group from its first byte and drops
// it unread once it is complete and older than the max latency: behind a 30 s
// backlog, a relay's raw subscribers lost records the relay counted as sent
// (chaos pg-pair 2079392861, docs/reliability.md).
import assert from "node:assert/strict";
import { RECORD_LAG_MS } from "../../../src/funnel/mod.ts";
import { accept, connect, TrackProducer } from "../../../src/moq/mod.ts";
import { connectQuicSession, listenQuic } from "../../../src/transport/mod.ts";
import type { RecvStream, Session } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { startUdpProxy } from "../../support/udp_proxy.ts";
import { within } from "../../support/wait.ts";

interface Span {
  began: number;
  ended?: number;
}

/** When each incoming unidirectional stream of `session` began and ended, in the order they came. */
function timed(session: Session): { session: Session; spans: Span[] } {
  const spans: Span[] = [];
  const wrapped: Session = {
    get transport() {
      return session.transport;
    },
    get protocol() {
      return session.protocol;
    },
    get url() {
      return session.url;
    },
    get remote() {
      return session.remote;
    },
    get closed() {
      return session.closed;
    },
    openBidi: (o) => session.openBidi(o),
    openUni: (o) => session.openUni(o),
    acceptBidi: () => session.acceptBidi(),
    acceptUni: async (): Promise<RecvStream | undefined> => {
      const s = await session.acceptUni();
      if (!s) return s;
      const span: Span = { began: performance.now() };
      spans.push(span);
      const readable = s.readable.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          flush: () => void (span.ended = performance.now()),
        }),
      );
      return { readable };
    },
    translateError: (err) => session.translateError(err),
    close: (code, reason) => session.close(code, reason),
  };
  return { session: wrapped, spans };
}

Deno.test("an ordered subscription's groups sent whole go one stream after another", async () => {
  const cert = await testCertificate();
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: ["moq-lite-05"] });
  const incoming = listener[Symbol.asyncIterator]().next();
  // The subscriber's link carries 1 MB/s, with room for everything queued: slower than the
  // subscriber reads, so what it sees is the order the bytes were sent in, and nothing is lost.
  const proxy = startUdpProxy({
    targetPort: listener.addr.port,
    toClient: { rateBytesPerSecond: 1_000_000, queueBytes: 4_000_000 },
  });
  const { session, spans } = timed(
    await connectQuicSession(new URL(`moqt://127.0.0.1:${proxy.port}/`), {
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      alpn: ["moq-lite-05"],
    }),
  );
  // A funnel's record track as it ships: in order, flow controlled, its lag bound advertised.
  const track = new TrackProducer({
    ordered: true,
    lagMs: RECORD_LAG_MS,
    maxLatency: RECORD_LAG_MS,
  });
  const serverP = accept((await incoming).value as Session, {
    serve: (r) => r.path === "demo/feed" && r.track === "records" ? track : "not_found",
  });
  const client = await connect(session);
  const server = await serverP;
  track.writeGroup(0, new Uint8Array([0]));
  const sub = client.subscribe("/demo/feed", "records");
  const it = sub[Symbol.asyncIterator]();
  assert.equal((await within(it.next(), 5000, "the first group")).value?.sequence, 0);

  // A backlog of large records at once, as a burst of 50 KB POSTs makes it.
  const count = 16;
  const written = performance.now();
  for (let i = 1; i <= count; i++) track.writeGroup(i, new Uint8Array(50_000).fill(i));
  const got: number[] = [];
  while (got.length < count) {
    const r = await within(it.next(), 20_000, "the backlog");
    if (r.done) break;
    got.push(r.value.sequence);
  }

  // Each group stream ended before the one after the next began: never more than two at
  // once (the end of one and the start of the next share a packet). Before, all 16 began
  // in the first packets and the first ended with the last.
  const backlog = spans.filter((s) => s.began >= written);
  assert.equal(backlog.length, count);
  const open = backlog.map((s) =>
    backlog.filter((o) => o.began <= s.began && (o.ended ?? Infinity) > s.began).length
  );
  assert.ok(Math.max(...open) <= 2, `streams open as each began: ${open.join(", ")}`);
  // So the subscriber has them in order.
  assert.deepEqual(got, Array.from({ length: count }, (_, i) => i + 1));

  await it.return?.();
  client.close();
  server.close();
  await Promise.all([client.closed, server.closed]);
  listener.stop();
  await proxy.close();
});
