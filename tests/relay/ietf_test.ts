// IETF MoQ Transport (drafts 14 and 16) through the relay, with @moq/net as
// the independent peer forced to one draft over native QUIC: IETF to IETF of
// the same draft, and across dialects both ways (moq-lite publisher to IETF
// subscriber, IETF publisher to moq-lite subscriber).
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { IetfCode, ietfCodec as c, type Subscription, TrackProducer } from "../../src/moq/mod.ts";
import type { MoqSession } from "../../src/moq/mod.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { dialNetIetf, dialNetIetfWeb, dialOurs, rawIetf, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { until, within } from "../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUPS = 50;
const DRAFTS = [14, 16, 20] as const;
/** Groups the writer may run ahead of the reader: below the relay's cache (8), so none is skipped. */
const AHEAD = 4;

/** A group as a subscriber saw it. */
interface Got {
  sequence: number;
  frames: string[];
}
type Next = () => Promise<Got | undefined>;

// The next group of an @moq/net subscription, every frame read.
function netNext(sub: Net.Track.Subscriber): Next {
  return async () => {
    const g = await sub.recvGroup();
    if (!g) return undefined;
    const frames: string[] = [];
    for (let f = await g.readFrame(); f; f = await g.readFrame()) {
      frames.push(dec.decode(f.payload));
    }
    return { sequence: g.sequence, frames };
  };
}

// The next group of our subscription.
function oursNext(sub: Subscription): Next {
  const it = sub[Symbol.asyncIterator]();
  return async () => {
    const r = await it.next();
    return r.done
      ? undefined
      : { sequence: r.value.sequence, frames: r.value.frames.map((f) => dec.decode(f)) };
  };
}

// The frames of group `seq`: three, the last growing with the sequence.
function framesOf(seq: number): string[] {
  return [`g${seq} a`, `g${seq} b`, `g${seq} ${"x".repeat(seq * 37)}`];
}

/**
 * Probes until the subscriber has a group (a subscription starts at the live
 * edge), then writes 50 groups of three frames, never more than AHEAD ahead
 * of the reader, and checks each arrived once with its frames in order and
 * bytes equal. Groups travel on parallel streams (newest first, as the
 * subscriber's descending group order asks), so they are compared by sequence.
 */
async function exchange(write: (frames: readonly string[]) => number, next: Next): Promise<void> {
  let last = -1;
  const probing = setInterval(() => (last = write(["probe"])), 50);
  try {
    await within(next(), 10_000, "the first probe");
  } finally {
    clearInterval(probing);
  }
  const first = last + 1;
  const got = new Map<number, string[]>();
  const reading = (async () => {
    while (got.size < GROUPS) {
      const g = await within(next(), 10_000, `group ${got.size + 1} of ${GROUPS}`);
      assert.ok(g, "the subscription ended early");
      if (g.sequence < first) continue;
      assert.ok(!got.has(g.sequence), `group ${g.sequence} arrived twice`);
      got.set(g.sequence, g.frames);
    }
  })();
  const sent: string[][] = [];
  for (let i = 0; i < GROUPS; i++) {
    assert.equal(write(framesOf(first + i)), first + i);
    sent.push(framesOf(first + i));
    await Promise.race([
      until(() => got.size >= i + 1 - AHEAD, `the reader near group ${i}`),
      reading,
    ]);
  }
  await reading;
  const bySequence = [...got.keys()].sort((a, b) => a - b).map((k) => got.get(k)!);
  assert.deepEqual(bySequence, sent, "50 of 50, frames in order, bytes equal");
}

// Writes one @moq/net group of `frames`; returns its sequence.
function netWriter(track: Net.Track.Producer): (frames: readonly string[]) => number {
  return (frames) => {
    const g = track.appendGroup();
    for (const f of frames) g.writeString(f);
    g.close();
    return g.sequence;
  };
}

type NetConnection = Awaited<ReturnType<typeof dialNetIetf>>;

/**
 * `pub` publishes track "data" at `path`; once a moq-lite session (`ours`)
 * sees the namespace announced, `subConn` subscribes and {@linkcode exchange}
 * checks what it receives.
 */
async function netToNet(
  pub: NetConnection,
  subConn: NetConnection,
  ours: MoqSession,
  path: string,
): Promise<void> {
  const broadcast = new Net.Broadcast.Producer();
  const track = broadcast.createTrack("data");
  pub.publish(Net.Path.from(path), broadcast);
  await within(seeAnnounced(ours, path), 10_000, `the publisher's namespace ${path}`);
  const sub = subConn.consume(Net.Path.from(path)).track("data").subscribe({});
  try {
    await exchange(netWriter(track), netNext(sub));
  } finally {
    sub.close();
  }
}

for (const draft of DRAFTS) {
  Deno.test(`ietf: a draft-${draft} @moq/net publisher reaches a draft-${draft} @moq/net subscriber through the relay`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const pub = await dialNetIetf(relay.port, draft);
    const subConn = await dialNetIetf(relay.port, draft);
    const ours = await dialOurs(relay.port);
    try {
      assert.equal(pub.version, `moq-transport-${draft}`);
      // The relay routes the IETF namespace like any announcement: a moq-lite client sees it.
      await netToNet(pub, subConn, ours, "ietf/cam");
    } finally {
      ours.close(0, "");
      pub.close();
      subConn.close();
      await relay.stop();
    }
  });

  Deno.test(`ietf: a moq-lite publisher's groups reach a draft-${draft} @moq/net subscriber, frames as objects`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const producer = new TrackProducer({ cache: 8 });
    const pub = await dialOurs(relay.port, { moq: { serve: () => producer } });
    const subConn = await dialNetIetf(relay.port, draft);
    const ours = await dialOurs(relay.port);
    try {
      pub.announce("lite/cam");
      await within(seeAnnounced(ours, "lite/cam"), 10_000, "the moq-lite announcement");
      const sub = subConn.consume(Net.Path.from("lite/cam")).track("t").subscribe({});
      let seq = 0;
      const write = (frames: readonly string[]): number => {
        producer.writeGroup(++seq, frames.map((f) => enc.encode(f)));
        return seq;
      };
      await exchange(write, netNext(sub));
      sub.close();
    } finally {
      ours.close(0, "");
      pub.close(0, "");
      subConn.close();
      await relay.stop();
    }
  });

  Deno.test(`ietf: a draft-${draft} @moq/net publisher's objects reach a moq-lite subscriber as frames`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const pub = await dialNetIetf(relay.port, draft);
    const ours = await dialOurs(relay.port);
    try {
      const broadcast = new Net.Broadcast.Producer();
      const track = broadcast.createTrack("data");
      pub.publish(Net.Path.from("ietf/feed"), broadcast);
      await within(seeAnnounced(ours, "ietf/feed"), 10_000, "the IETF publisher's namespace");
      const sub = ours.subscribe("ietf/feed", "data");
      await within(sub.ready, 10_000, "the moq-lite subscription");
      await exchange(netWriter(track), oursNext(sub));
      sub.close();
    } finally {
      ours.close(0, "");
      pub.close();
      await relay.stop();
    }
  });

  Deno.test(`ietf: a draft-${draft} subscriber's SUBSCRIBE_NAMESPACE sees broadcasts come and go`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const pub = await dialOurs(relay.port, { moq: { serve: () => "not_found" } });
    const net = await dialNetIetf(relay.port, draft);
    const ours = await dialOurs(relay.port);
    try {
      const first = pub.announce("room/a");
      await within(seeAnnounced(ours, "room/a"), 10_000, "room/a on the relay");
      const announced = net.announced(Net.Path.from("room"));
      const next = async (): Promise<string> => {
        const e = await within(announced.next(), 10_000, "an announcement");
        assert.ok(e, "the announcements ended");
        return `${e.path} ${e.active ? "active" : "ended"}`;
      };
      assert.equal(
        await next(),
        "a active",
        "the broadcast already routed (named under the prefix)",
      );
      pub.announce("room/b");
      assert.equal(await next(), "b active", "a broadcast routed later");
      first.withdraw();
      assert.equal(await next(), "a ended", "a broadcast that ended");
      announced.close();
    } finally {
      ours.close(0, "");
      pub.close(0, "");
      net.close();
      await relay.stop();
    }
  });
}

for (const draft of [16, 20] as const) {
  Deno.test(`ietf: draft ${draft} over WebSocket (@moq/net's QMux) reaches draft ${draft} over WebTransport`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const pub = await dialNetIetfWeb(relay.port, "websocket", draft);
    const subConn = await dialNetIetfWeb(relay.port, "webtransport", draft);
    const ours = await dialOurs(relay.port);
    try {
      assert.equal(pub.version, `moq-transport-${draft}`);
      assert.equal(subConn.version, `moq-transport-${draft}`);
      await netToNet(pub, subConn, ours, "web/cam");
    } finally {
      ours.close(0, "");
      pub.close();
      subConn.close();
      await relay.stop();
    }
  });
}

Deno.test("ietf: auth on: the setup PATH carries the credential on native QUIC; none, or a peer one, is refused", async () => {
  using _q = quiet();
  const relay = await startTestRelay({ auth: true });
  const jwt = await relay.token({
    scopes: [{ actions: ["publish"], broadcast: { prefix: "room" } }],
  });
  try {
    const ok = await rawIetf(relay.port, `/?jwt=${jwt}`);
    assert.equal((await ok.answer(c.Msg.ServerSetup)).type, c.Msg.ServerSetup);
    await ok.send(
      c.Msg.PublishNamespace,
      c.encodeNamespaceRequest({ requestId: 0n, path: "room/x" }, 14),
    );
    const granted = await ok.answer(c.Msg.PublishNamespaceOk, c.Msg.PublishNamespaceError);
    assert.equal(granted.type, c.Msg.PublishNamespaceOk, "a namespace the credential covers");
    await ok.send(
      c.Msg.PublishNamespace,
      c.encodeNamespaceRequest({ requestId: 2n, path: "other/y" }, 14),
    );
    const refused = await ok.answer(c.Msg.PublishNamespaceOk, c.Msg.PublishNamespaceError);
    assert.equal(refused.type, c.Msg.PublishNamespaceError, "a namespace it does not cover");
    ok.session.close(0, "");

    // A peer credential is refused: the mesh speaks moq-lite.
    const peerJwt = await relay.token({
      scopes: [{ actions: ["peer"], broadcast: { prefix: "" } }],
    });
    const peer = await rawIetf(relay.port, `/?jwt=${peerJwt}`);
    assert.equal(
      (await within(peer.session.closed, 5000, "the peer's refusal")).code,
      IetfCode.Unauthorized,
    );
    assert.ok(relay.logs.some((l) => l.includes("a peer relay must speak moq-lite")));

    const none = await rawIetf(relay.port);
    const info = await within(none.session.closed, 5000, "the refusal");
    assert.equal(info.code, IetfCode.Unauthorized);
    assert.ok(relay.logs.some((l) => l.includes("refused")), "the refusal is logged");
    assert.ok(!relay.logs.some((l) => l.includes(jwt)), "the credential is never logged");
  } finally {
    await relay.stop();
  }
});

Deno.test("ietf: a draining relay sends an IETF client GOAWAY with its redirect", async () => {
  using _q = quiet();
  const relay = await startTestRelay({ extra: { goawayUri: "moqt://next.example:4433/" } });
  try {
    const client = await rawIetf(relay.port);
    await client.answer(c.Msg.ServerSetup);
    const draining = relay.relay.drain(200);
    const goaway = await client.answer(c.Msg.GoAway);
    assert.equal(c.decodeGoaway(goaway.body, 14), "moqt://next.example:4433/");
    client.session.close(0, "");
    assert.equal(await draining, true, "the client left, so the relay drained");
  } finally {
    await relay.stop();
  }
});
