// sluice as an IETF client: our session dials the relay with a draft's ALPN
// (`connectIetf`), tells its namespace unasked (PUBLISH_NAMESPACE) and serves
// the relay's SUBSCRIBE; @moq/net forced to the same draft subscribes at the
// relay (the independent peer), and a moq-lite subscriber beside it.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { Announcer, connectIetf, TrackProducer } from "../../src/moq/mod.ts";
import { connectQuicSession, type Session } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { dialNetIetf, dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { within } from "../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A native QUIC session to the relay on `draft`'s ALPN, trusting the test certificate. */
async function dialQuic(port: number, draft: 14 | 16 | 20): Promise<Session> {
  const cert = await testCertificate();
  return await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
    alpn: [draft === 14 ? "moq-00" : `moqt-${draft}`],
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
}

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf client: a draft-${draft} sluice publisher reaches @moq/net and moq-lite subscribers through the relay`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const transport = await dialQuic(relay.port, draft);
    const announcer = new Announcer();
    const track = new TrackProducer({ cache: 32 });
    const pub = await connectIetf(transport, draft, { announcer, serve: () => track });
    const ours = await dialOurs(relay.port);
    const net = await dialNetIetf(relay.port, draft);
    try {
      assert.equal(pub.version, `moq-transport-${draft}`);
      announcer.announce("ietf/funnel");
      await within(seeAnnounced(ours, "ietf/funnel"), 10_000, "our namespace at the relay");
      const lite = ours.subscribe("ietf/funnel", "chat");
      await within(lite.ready, 10_000, "the moq-lite subscription");
      const sub = net.consume(Net.Path.from("ietf/funnel")).track("chat").subscribe({});
      // Probes until both subscribers see groups (each starts at the live edge).
      let seq = 0;
      const liteIt = lite[Symbol.asyncIterator]();
      const probing = setInterval(() => track.writeGroup(++seq, [enc.encode("probe")]), 50);
      let first: number;
      try {
        const g = await within(sub.recvGroup(), 10_000, "a probe at @moq/net");
        assert.ok(g);
        await within(liteIt.next(), 10_000, "a probe at moq-lite");
      } finally {
        clearInterval(probing);
        first = seq + 1;
      }
      for (let i = 0; i < 10; i++) {
        track.writeGroup(first + i, [enc.encode(`r${i} a`), enc.encode(`r${i} b`)]);
      }
      const got = new Map<number, string[]>();
      while (got.size < 10) {
        const g = await within(sub.recvGroup(), 10_000, "a record group");
        assert.ok(g, "the subscription ended early");
        const frames: string[] = [];
        for (let f = await g.readFrame(); f; f = await g.readFrame()) {
          frames.push(dec.decode(f.payload));
        }
        if (g.sequence >= first) got.set(g.sequence, frames);
      }
      for (let i = 0; i < 10; i++) assert.deepEqual(got.get(first + i), [`r${i} a`, `r${i} b`]);
      const liteGot = new Set<number>();
      while (liteGot.size < 10) {
        const r = await within(liteIt.next(), 10_000, "a moq-lite group");
        assert.ok(!r.done);
        if (r.value.sequence >= first) liteGot.add(r.value.sequence);
      }
      sub.close();
      lite.close();
    } finally {
      net.close();
      ours.close(0, "");
      pub.close();
      await relay.stop();
    }
  });
}

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf client: a moq-lite FETCH at the relay is asked of the draft-${draft} publisher upstream`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const transport = await dialQuic(relay.port, draft);
    const announcer = new Announcer();
    const track = new TrackProducer({ cache: 32 });
    for (let g = 1; g <= 6; g++) {
      track.writeGroup(g, [enc.encode(`g${g} a`), enc.encode(`g${g} b`)]);
    }
    const pub = await connectIetf(transport, draft, { announcer, serve: () => track });
    const ours = await dialOurs(relay.port);
    try {
      announcer.announce("ietf/records");
      await within(seeAnnounced(ours, "ietf/records"), 10_000, "the namespace at the relay");
      const g = await within(ours.fetch("ietf/records", "chat", 3), 10_000, "group 3");
      assert.equal(g.sequence, 3);
      assert.deepEqual(g.frames.map((f) => dec.decode(f)), ["g3 a", "g3 b"]);
      await assert.rejects(ours.fetch("ietf/records", "chat", 40), "a group never written");
      assert.ok(!pub.isClosed);
    } finally {
      ours.close(0, "");
      pub.close();
      await relay.stop();
    }
  });
}

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf client: FETCH of a draft-${draft} @moq/net publisher, which serves none, is refused and leaves its session`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const pub = await dialNetIetf(relay.port, draft);
    const ours = await dialOurs(relay.port);
    try {
      const broadcast = new Net.Broadcast.Producer();
      const track = broadcast.createTrack("data");
      pub.publish(Net.Path.from("net/feed"), broadcast);
      await within(seeAnnounced(ours, "net/feed"), 10_000, "the namespace");
      const g = track.appendGroup();
      g.writeString("x");
      g.close();
      const started = Date.now();
      await assert.rejects(within(ours.fetch("net/feed", "data", 0), 15_000, "the refusal"));
      // Drafts 14 and 16: @moq/net answers nothing, so the first waits out the answer time
      // (5 s); a second is refused at once. Draft 20: it resets the request's stream.
      assert.ok(Date.now() - started < 7000, "within the answer time");
      const again = Date.now();
      await assert.rejects(within(ours.fetch("net/feed", "data", 1), 15_000, "the second"));
      assert.ok(Date.now() - again < 1000, "not asked again");
      // The publisher still serves subscriptions.
      const sub = ours.subscribe("net/feed", "data");
      await within(sub.ready, 10_000, "a subscription after the refused FETCH");
      sub.close();
    } finally {
      ours.close(0, "");
      pub.close();
      await relay.stop();
    }
  });
}

// An IETF route answers moq-lite's TRACK with the default properties (timescale 1000), so the
// relay hands timestamps on in milliseconds, converted from the publisher's TIMESCALE.
Deno.test("ietf client: draft 20 timestamps cross to moq-lite, converted from the publisher's timescale to ms", async () => {
  using _q = quiet();
  const relay = await startTestRelay();
  const transport = await dialQuic(relay.port, 20);
  const announcer = new Announcer();
  const track = new TrackProducer({ cache: 32, timescale: 90_000 });
  const pub = await connectIetf(transport, 20, { announcer, serve: () => track });
  const ours = await dialOurs(relay.port);
  try {
    announcer.announce("ietf/stamped");
    await within(seeAnnounced(ours, "ietf/stamped"), 10_000, "the namespace at the relay");
    const sub = ours.subscribe("ietf/stamped", "v");
    await within(sub.ready, 10_000, "the subscription");
    assert.equal(sub.info?.timescale, 1000, "an IETF route's default properties");
    const it = sub[Symbol.asyncIterator]();
    let seq = 0;
    const stampOf = (g: number) => 2n ** 40n + BigInt(g) * 3000n;
    const probing = setInterval(() => {
      seq++;
      track.writeGroup(seq, [enc.encode(`f${seq}`)], { timestamp: stampOf(seq) });
    }, 50);
    try {
      const r = await within(it.next(), 10_000, "a group");
      assert.ok(!r.done);
      assert.equal(r.value.exactTimestamp, stampOf(r.value.sequence) * 1000n / 90_000n);
    } finally {
      clearInterval(probing);
    }
  } finally {
    ours.close(0, "");
    pub.close();
    await relay.stop();
  }
});
