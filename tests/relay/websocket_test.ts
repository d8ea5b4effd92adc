// The relay's WebSocket fallback: QMux sessions on its TCP port beside /health,
// /routes and /metrics, admitted like WebTransport, counted as transport="websocket".
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { type MoqSession, type Subscription, TrackProducer } from "../../src/moq/mod.ts";
import { QMuxConnectError, type QMuxDraft } from "../../src/transport/mod.ts";
import { openRawWebSocket, type RawWebSocket } from "../../src/transport/mod.ts";
import { Opcode, parseClose, parseServerFrame } from "../../src/transport/mod.ts";
import { concatBytes } from "../../src/wire/mod.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { testCertificate } from "../support/certs.ts";
import { dialNet, dialOurs, seeAnnounced } from "../support/moq.ts";
import { upgradeStatus } from "../support/qmux.ts";
import { abuse, HOSTILE_CASES } from "../support/qmux_hostile.ts";
import { quiet } from "../support/quiet.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";
import { until } from "../support/wait.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { RELAY_DEFAULTS } from "../../src/config/mod.ts";

const GROUPS = 300;
/**
 * Groups the publisher may run ahead of the slowest reader: below the test relay's
 * GROUP_CACHE_SIZE (8), the lag after which the relay skips a subscriber forward.
 */
const AHEAD = 4;
const enc = new TextEncoder();
const dec = new TextDecoder();

type Reader = () => Promise<number | undefined>;

function ourReader(sub: Subscription, prefix: string): Reader {
  const it = sub[Symbol.asyncIterator]();
  return async () => {
    const r = await it.next();
    if (r.done) return undefined;
    assert.equal(dec.decode(r.value.frames[0]), `${prefix}${r.value.sequence}`);
    return r.value.sequence;
  };
}

function netReader(sub: Net.Track.Subscriber, prefix: string): Reader {
  return async () => {
    const g = await sub.recvGroup();
    if (!g) return undefined;
    const f = await g.readFrame();
    assert.equal(dec.decode(f?.payload), `${prefix}${g.sequence}`);
    return g.sequence;
  };
}

/**
 * Writes groups 2..GROUPS+1 with `write`, never more than AHEAD in front of the
 * slowest reader, and checks every reader sees every group exactly once.
 */
async function deliverAll(write: (seq: number) => void, readers: Reader[]): Promise<void> {
  const got = readers.map(() => new Set<number>());
  const reading = readers.map(async (read, i) => {
    while (got[i]!.size < GROUPS) {
      const seq = await read();
      if (seq === undefined) break;
      if (seq >= 2) got[i]!.add(seq);
    }
  });
  for (let seq = 2; seq <= GROUPS + 1; seq++) {
    write(seq);
    await until(() => got.every((g) => g.size >= seq - 1 - AHEAD), `readers near group ${seq}`);
  }
  await until(() => got.every((g) => g.size === GROUPS), "every reader at every group");
  await Promise.all(reading);
  for (const g of got) assert.equal(g.size, GROUPS);
}

/** The first group, written until each reader sees one (subscriptions start at the latest). */
async function primed(write: (seq: number) => void, readers: Reader[]): Promise<void> {
  write(1);
  for (const read of readers) assert.equal(await read(), 1);
}

Deno.test("@moq/net over WebSocket publishes and subscribes through the relay, next to native QUIC", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  // @moq/net sees no WebTransport, so it dials wss:// itself (its QMux over WebSocket).
  const netPub = await dialNet(t.port, { webSocket: true });
  const netSub = await dialNet(t.port, { webSocket: true });
  const quic = await dialOurs(t.port);
  assert.equal(netPub.version, "moq-lite-05");

  // They publish over WebSocket; a WebSocket and a native-QUIC subscriber share the track.
  const broadcast = new Net.Broadcast.Producer();
  const track = broadcast.createTrack("data");
  netPub.publish(Net.Path.from("ws/cam"), broadcast);
  await seeAnnounced(quic, "ws/cam");
  const quicSub = quic.subscribe("ws/cam", "data");
  await quicSub.ready;
  const wsSub = netSub.consume(Net.Path.from("ws/cam")).track("data").subscribe({ priority: 1 });
  const writeNet = (seq: number) => {
    const g = track.appendGroup();
    assert.equal(g.sequence, seq - 1); // @moq/net numbers its groups from 0
    g.writeString(`x${seq - 1}`);
    g.close();
  };
  const toSeq = (r: Reader): Reader => async () => {
    const s = await r();
    return s === undefined ? undefined : s + 1;
  };
  const fromNet = [toSeq(ourReader(quicSub, "x")), toSeq(netReader(wsSub, "x"))];
  await primed(writeNet, fromNet);
  await deliverAll(writeNet, fromNet);

  // We publish over native QUIC; the WebSocket subscriber and a QUIC one get every group.
  const producer = new TrackProducer({ cache: 8 });
  const pub = await dialOurs(t.port, { moq: { serve: () => producer } });
  pub.announce("quic/cam");
  await seeAnnounced(quic, "quic/cam");
  const quicSub2 = quic.subscribe("quic/cam", "t");
  await quicSub2.ready;
  const wsSub2 = netSub.consume(Net.Path.from("quic/cam")).track("t").subscribe({ priority: 1 });
  const write = (seq: number) => producer.writeGroup(seq, enc.encode(`q${seq}`));
  const fromQuic = [ourReader(quicSub2, "q"), netReader(wsSub2, "q")];
  await primed(write, fromQuic);
  await deliverAll(write, fromQuic);

  const f = families(await (await t.get("/metrics")).text());
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", { transport: "websocket", class: "client" }),
    2,
  );
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", { transport: "quic", class: "client" }),
    2,
  );
  netPub.close();
  netSub.close();
  broadcast.close();
  // @moq/net closes with APPLICATION_CLOSE: both sessions end as "closed", not "dropped".
  const closed = async () =>
    sampleValue(
      families(await (await t.get("/metrics")).text()),
      "sluice_relay_sessions_closed_total",
      {
        transport: "websocket",
        class: "client",
        reason: "closed",
      },
    );
  await until(async () => (await closed()) === 2, "both WebSocket sessions counted closed");
  const m = families(await (await t.get("/metrics")).text());
  const bytes = sampleValue(m, "sluice_relay_session_bytes_total", {
    transport: "websocket",
    class: "client",
    direction: "sent",
  });
  assert.ok(bytes !== undefined && bytes > GROUPS * 2 * 2, `websocket bytes sent ${bytes}`);
  quic.close(0, "");
  pub.close(0, "");
  await t.stop();
});

for (const draft of ["qmux-02", "qmux-01", "qmux-00"] as QMuxDraft[]) {
  Deno.test(`our client over ${draft} publishes and subscribes through the relay`, async () => {
    using _q = quiet();
    const t = await startTestRelay();
    const producer = new TrackProducer({ cache: 8 });
    const pub = await dialOurs(t.port, { webSocket: [draft], moq: { serve: () => producer } });
    const sub = await dialOurs(t.port, { webSocket: [draft] });
    const quic = await dialOurs(t.port);
    assert.equal(pub.version, "moq-lite-05");
    pub.announce("d/cam");
    await seeAnnounced(sub, "d/cam");
    const subs = [sub.subscribe("d/cam", "t"), quic.subscribe("d/cam", "t")];
    await Promise.all(subs.map((s) => s.ready));
    const write = (seq: number) => producer.writeGroup(seq, enc.encode(`d${seq}`));
    const readers = subs.map((s) => ourReader(s, "d"));
    await primed(write, readers);
    await deliverAll(write, readers);
    const f = families(await (await t.get("/metrics")).text());
    assert.equal(
      sampleValue(f, "sluice_relay_sessions_total", { transport: "websocket", class: "client" }),
      2,
    );
    for (const m of [pub, sub, quic] as MoqSession[]) m.close(0, "");
    await t.stop();
  });
}

Deno.test("WebSocket admission: 401, 403 and 400 before the upgrade, like WebTransport", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  const c = await testCertificate();
  const roomOnly = await t.token({
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  });
  const offer = { "Sec-WebSocket-Protocol": "qmux-02.moq-lite-05, qmux-01.moq-lite-05" };
  const cases: [string, Record<string, string>, number][] = [
    ["/", offer, 401],
    ["/?jwt=garbage", offer, 401],
    [`/secret?jwt=${roomOnly}`, offer, 403],
    [`/room?jwt=${roomOnly}`, { ...offer, Origin: "https://evil.example" }, 403],
    [`/room?jwt=${roomOnly}`, { "Sec-WebSocket-Protocol": "qmux-02, webtransport" }, 400],
    [`/room?jwt=${roomOnly}`, { "Sec-WebSocket-Protocol": "qmux-02.moq-lite-03" }, 400],
    [`/room?jwt=${roomOnly}`, {}, 400],
    [`/room?jwt=${roomOnly}`, { ...offer, Origin: "https://app.example" }, 101],
    [`/room?jwt=${roomOnly}`, offer, 101],
  ];
  for (const [path, headers, status] of cases) {
    assert.equal(
      await upgradeStatus(t.port, c.certPem, path, headers),
      status,
      `${path} ${JSON.stringify(headers)}`,
    );
  }
  // Refused upgrades never became sessions.
  await until(async () => {
    const f = families(await (await t.get("/metrics")).text());
    return sampleValue(f, "sluice_relay_sessions_total", {
      transport: "websocket",
      class: "client",
    }) === 2;
  }, "the two admitted sessions counted");
  // Our client learns the status too.
  await assert.rejects(
    dialOurs(t.port, { webSocket: ["qmux-02"], jwt: "garbage" }),
    (e: unknown) => e instanceof QMuxConnectError && e.status === 401,
  );
  // Our client with a good credential gets through.
  const ok = await dialOurs(t.port, {
    webSocket: ["qmux-02"],
    jwt: roomOnly,
    origin: "https://app.example",
  });
  ok.close(0, "");
  // The HTTP endpoints still answer on the same port.
  assert.equal((await t.get("/health")).status, 200);
  await t.stop();
});

// A ring and lag bound of 4 (shipped 8): the stalled subscriber falls behind after fewer groups;
// the twin at the shipped size keeps the same promise.
for (const cacheSize of [4, RELAY_DEFAULTS.GROUP_CACHE_SIZE]) {
  Deno.test(`a WebSocket subscriber that stops reading its socket is skipped forward; a fast one is not slowed (ring of ${cacheSize})`, async () => {
    using _q = quiet();
    const t = await startTestRelay({ cacheSize });
    const proxy = startTcpProxy("127.0.0.1", t.port);
    const producer = new TrackProducer({ cache: 8 });
    const pub = await dialOurs(t.port, { moq: { serve: () => producer } });
    const fast = await dialOurs(t.port, { webSocket: ["qmux-02"] });
    // The slow one reaches the relay through a proxy that can stop reading the relay's bytes.
    const slow = await dialOurs(proxy.port, { webSocket: ["qmux-02"] });
    try {
      pub.announce("live/ws");
      await seeAnnounced(fast, "live/ws");
      const fs = fast.subscribe("live/ws", "t");
      const ss = slow.subscribe("live/ws", "t");
      await Promise.all([fs.ready, ss.ready]);
      const fit = fs[Symbol.asyncIterator]();
      const sit = ss[Symbol.asyncIterator]();
      const payload = (seq: number) => {
        const b = new Uint8Array(64 * 1024);
        new DataView(b.buffer).setUint32(0, seq);
        return b;
      };
      producer.writeGroup(1, payload(1));
      assert.equal((await fit.next()).value?.sequence, 1);
      assert.equal((await sit.next()).value?.sequence, 1);

      proxy.holdDownstream();
      // 400 groups of 64 KiB (25 MiB): far more than any socket buffer holds.
      const N = 401;
      for (let seq = 2; seq <= N; seq++) {
        producer.writeGroup(seq, payload(seq));
        const g = (await fit.next()).value!;
        assert.equal(g.sequence, seq, "the fast subscriber gets every group, in order");
        assert.equal(new DataView(g.frames[0]!.buffer, g.frames[0]!.byteOffset).getUint32(0), seq);
      }
      proxy.releaseDownstream();
      const slowGot: number[] = [];
      while (slowGot.at(-1) !== N) slowGot.push((await sit.next()).value!.sequence);
      assert.ok(slowGot.length < N - 1, `the slow subscriber skipped (${slowGot.length} groups)`);
      const f = families(await (await t.get("/metrics")).text());
      assert.ok(sampleValue(f, "sluice_relay_subscriber_skips_total")! >= 1);
    } finally {
      for (const m of [pub, fast, slow]) m.close(0, "");
      await proxy.close();
      await t.stop();
    }
  });
}

Deno.test("hostile WebSocket peers end only their own session; the relay keeps serving", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  const c = await testCertificate();
  const producer = new TrackProducer({ cache: 8 });
  const pub = await dialOurs(t.port, { moq: { serve: () => producer } });
  const sub = await dialOurs(t.port, { webSocket: ["qmux-02"] });
  try {
    pub.announce("steady/cam");
    await seeAnnounced(sub, "steady/cam");
    const steady = sub.subscribe("steady/cam", "t");
    await steady.ready;
    const it = steady[Symbol.asyncIterator]();
    let seq = 0;
    const stillFlowing = async () => {
      producer.writeGroup(++seq, enc.encode(`s${seq}`));
      assert.equal((await it.next()).value?.sequence, seq);
    };
    await stillFlowing();
    // The relay reads every stream it is given (and stops those it has no use for), which
    // frees their credit lawfully: the pure window cases are the transport tests' business.
    for (const c2 of HOSTILE_CASES.filter((c) => !c.idleApplication)) {
      const outcome = await abuse(new URL(`wss://localhost:${t.port}/`), c2.send, {
        caPem: c.certPem,
        ...(c2.noParams ? { noParams: true } : {}),
      });
      assert.equal(outcome.close?.code, c2.code, `${c2.name}: ${outcome.close?.reason}`);
      if (c2.wsCode !== undefined) assert.equal(outcome.wsCode, c2.wsCode, c2.name);
      // The WebSocket subscriber next to it keeps receiving, and new sessions are admitted.
      await stillFlowing();
    }
    const fresh = await dialOurs(t.port, { webSocket: ["qmux-01"] });
    fresh.close(0, "");
    await until(async () => {
      const f = families(await (await t.get("/metrics")).text());
      return sampleValue(f, "sluice_relay_sessions_closed_total", {
        transport: "websocket",
        class: "client",
        reason: "error",
      }) !== undefined;
    }, "the hostile sessions counted");
    assert.equal((await t.get("/health")).status, 200);
  } finally {
    pub.close(0, "");
    sub.close(0, "");
    await t.stop();
  }
});

/** Opens a WebSocket and starts one binary message of `declared` bytes, sending `sent` of them. */
async function startLargeMessage(
  port: number,
  caPem: string,
  declared: number,
  sent: number,
): Promise<RawWebSocket> {
  const raw = await openRawWebSocket(new URL(`wss://localhost:${port}/`), {
    protocols: ["qmux-02.moq-lite-05"],
    caCerts: [caPem],
  });
  // FIN + binary, a 64-bit length, a zero mask (the payload goes out as it is).
  const header = new Uint8Array(14);
  header.set([0x82, 0x80 | 127]);
  new DataView(header.buffer).setBigUint64(2, BigInt(declared));
  await writeAll(raw.conn, header);
  await writeAll(raw.conn, new Uint8Array(sent));
  return raw;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

/** Reads the server's frames until its close frame; its code and reason. */
async function closeFrame(raw: RawWebSocket): Promise<{ code: number; reason: string }> {
  let buf = raw.rest;
  for (;;) {
    let parsed;
    while ((parsed = parseServerFrame(buf, 1 << 20))) {
      if (parsed.frame.opcode === Opcode.CLOSE) return parseClose(parsed.frame.payload);
      buf = buf.subarray(parsed.size);
    }
    const chunk = new Uint8Array(64 * 1024);
    const n = await raw.conn.read(chunk);
    if (n === null) return { code: 1006, reason: "closed without a close frame" };
    buf = concatBytes([buf, chunk.subarray(0, n)]);
  }
}

Deno.test("WebSocket connections sending a large message before they set up: those past the limit are refused (503), the others closed (1009); the relay keeps serving", async () => {
  using _q = quiet();
  const LIMIT = 3;
  // A long setup deadline: this test is about the limit, not the deadline.
  const t = await startTestRelay({
    extra: { webSocketSetup: { maxSettingUp: LIMIT, timeoutMs: 600_000 } },
  });
  const c = await testCertificate();
  const DECLARED = 16 << 20; // one message, far above the 64 KiB QMux record limit
  const SENT = 1 << 20; // what Deno holds for each before any of our code sees it
  const held: RawWebSocket[] = [];
  const refusals: QMuxConnectError[] = [];
  const producer = new TrackProducer({ cache: 8 });
  const sessions: MoqSession[] = [];
  try {
    for (let i = 0; i < LIMIT * 3; i++) {
      try {
        held.push(await startLargeMessage(t.port, c.certPem, DECLARED, SENT));
      } catch (e) {
        if (!(e instanceof QMuxConnectError)) throw e;
        refusals.push(e);
      }
    }
    assert.equal(held.length, LIMIT, "only LIMIT connections are upgraded while none set up");
    assert.equal(refusals.length, LIMIT * 2);
    for (const r of refusals) {
      assert.equal(r.status, 503);
      assert.match(r.message, /Too many WebSocket sessions are setting up \(3\)/);
    }
    // Meanwhile the relay serves: a publisher and a subscriber over native QUIC.
    const pub = await dialOurs(t.port, { moq: { serve: () => producer } });
    const quic = await dialOurs(t.port);
    sessions.push(pub, quic);
    pub.announce("big/cam");
    await seeAnnounced(quic, "big/cam");
    const sub = quic.subscribe("big/cam", "t");
    await sub.ready;
    const read = ourReader(sub, "b");
    producer.writeGroup(1, enc.encode("b1"));
    assert.equal(await read(), 1);
    // The held messages complete: each is refused by the record-size check and its
    // connection closed, which frees its place.
    for (const raw of held) {
      await writeAll(raw.conn, new Uint8Array(DECLARED - SENT));
      const close = await closeFrame(raw);
      assert.equal(close.code, 1009, close.reason);
      assert.match(close.reason, /exceeds 65536/);
    }
    // A legitimate WebSocket client sets up and receives.
    const ws = await dialOurs(t.port, { webSocket: ["qmux-02"] });
    sessions.push(ws);
    await seeAnnounced(ws, "big/cam");
    const wsSub = ws.subscribe("big/cam", "t");
    await wsSub.ready;
    const wsRead = ourReader(wsSub, "b");
    assert.equal(await wsRead(), 1, "a subscription starts at the latest group");
    producer.writeGroup(2, enc.encode("b2"));
    assert.equal(await read(), 2);
    assert.equal(await wsRead(), 2);
    assert.equal((await t.get("/health")).status, 200);
  } finally {
    for (const raw of held) {
      try {
        raw.conn.close();
      } catch {
        // closed by the relay
      }
    }
    for (const s of sessions) s.close(0, "");
    await t.stop();
  }
});
