// RELAY_DATAGRAM_TRACKS through a real relay: client sessions that carry
// datagrams (native QUIC, WebTransport) get the named tracks' small groups
// as datagrams, QMux over WebSocket and other tracks get streams, and the
// relay counts both in /metrics.
import assert from "node:assert/strict";
import { MAX_DATAGRAM_BODY, type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { parseTrackPatterns } from "../../src/path/mod.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import * as Net from "@moq/net";
import { dialNet, dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { until, within } from "../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("relay: datagram tracks reach QUIC and WebTransport clients as datagrams, WebSocket and other tracks on streams", async () => {
  using _q = quiet();
  const t = await startTestRelay({
    extra: { datagramTracks: parseTrackPatterns("room/chat") },
  });
  const chat = new TrackProducer({ cache: 16 });
  const video = new TrackProducer({ cache: 16 });
  const publisher = await dialOurs(t.port, {
    moq: {
      serve: (r) =>
        r.path !== "room/1"
          ? "not_found"
          : r.track === "chat"
          ? chat
          : r.track === "video"
          ? video
          : "not_found",
    },
  });
  publisher.announce("room/1");
  const clients: MoqSession[] = [
    await dialOurs(t.port, { alpn: "moq-lite-05" }),
    await dialOurs(t.port, { webTransport: true }),
    await dialOurs(t.port, { webSocket: ["qmux-02"] }),
  ];
  let netSession: { close(): void } | undefined;
  try {
    for (const c of clients) await seeAnnounced(c, "room/1");
    const subs = clients.map((c) => c.subscribe("room/1", "chat", { start: 1 }));
    const vsubs = clients.map((c) => c.subscribe("room/1", "video", { start: 1 }));
    await Promise.all([...subs, ...vsubs].map((s) => s.ready));
    // @moq/net over WebTransport takes datagrams too (this track's millisecond timestamps fit 53 bits).
    const net = await dialNet(t.port, { webTransport: true });
    netSession = net;
    const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    await until(async () => {
      const f = families(await (await t.get("/metrics")).text());
      return sampleValue(f, "sluice_relay_track_subscriptions_active", {
        path: "/room/1",
        track: "chat",
      }) === 4;
    }, "@moq/net subscribed");
    const its = subs.map((s) => s[Symbol.asyncIterator]());
    const vits = vsubs.map((s) => s[Symbol.asyncIterator]());
    const big = new Uint8Array(MAX_DATAGRAM_BODY + 100).fill(1);
    const SMALL = 20;
    // Each group is written once every client has the previous one: nothing is skipped.
    for (let seq = 1; seq <= SMALL + 1; seq++) {
      if (seq === 10) chat.writeGroup(seq, big);
      else chat.writeGroup(seq, enc.encode(`chat ${seq}`));
      video.writeGroup(seq, enc.encode(`video ${seq}`));
      for (const it of its) {
        const g = (await within(it.next(), 10_000, `chat ${seq}`)).value;
        assert.equal(g?.sequence, seq);
        if (seq === 10) assert.deepEqual(g.frames, [big]);
        else assert.equal(dec.decode(g.frames[0]), `chat ${seq}`);
      }
      for (;;) {
        const g = await within(netSub.recvGroup(), 10_000, `@moq/net chat ${seq}`);
        assert.ok(g);
        const f = await g.readFrame();
        if (g.sequence === seq) {
          assert.equal(
            f?.payload.length,
            seq === 10 ? big.length : enc.encode(`chat ${seq}`).length,
          );
          break;
        }
      }
      for (const it of vits) {
        const g = (await within(it.next(), 10_000, `video ${seq}`)).value;
        assert.equal(dec.decode(g?.frames[0]), `video ${seq}`);
      }
    }
    const [quic, wt, ws] = clients as [MoqSession, MoqSession, MoqSession];
    // 21 chat groups, one too big: 20 datagrams each on QUIC and WebTransport, none on WebSocket.
    assert.equal(quic.stats.datagramsReceived, SMALL);
    assert.equal(wt.stats.datagramsReceived, SMALL);
    assert.equal(ws.stats.datagramsReceived, 0);
    const f = families(await (await t.get("/metrics")).text());
    assert.equal(sampleValue(f, "sluice_relay_datagram_groups_total"), 3 * SMALL);
    assert.equal(sampleValue(f, "sluice_relay_datagram_fallbacks_total"), 3);
  } finally {
    for (const c of clients) c.close(0, "");
    netSession?.close();
    publisher.close(0, "");
    await t.stop();
  }
});
