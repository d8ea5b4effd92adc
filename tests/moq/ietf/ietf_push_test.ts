// Our PUBLISH (drafts 16 and 20): the client role pushes each open track, and honours what the
// subscriber's acceptance asks. The peer is our own IETF session in the relay's role over real
// QUIC (@moq/net 0.3.4 refuses PUBLISH: NOT_SUPPORTED), which accepts a pushed track with FORWARD 0
// and forwards it (REQUEST_UPDATE) once a subscription claims it, or, for the fields sluice's relay
// does not set (priority, a start group), a raw draft-16 server of our codec.
import assert from "node:assert/strict";
import {
  acceptIetf,
  connectIetf,
  ietfCodec as c,
  type OpenTrack,
  type OpenTracks,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until, within } from "../../support/wait.ts";
import { StreamReader } from "../../../src/wire/mod.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const ALPN = { 16: "moqt-16", 20: "moqt-20" } as const;

// A fixed set of open tracks; `close` tells the watchers one closed.
function fixedTracks(tracks: readonly OpenTrack[]): OpenTracks & { close(t: OpenTrack): void } {
  const watchers = new Set<(t: OpenTrack, open: boolean) => void>();
  return {
    watch(listener) {
      watchers.add(listener);
      for (const t of tracks) listener(t, true);
      return () => void watchers.delete(listener);
    },
    close(t) {
      for (const w of watchers) w(t, false);
    },
  };
}

for (const draft of [16, 20] as const) {
  Deno.test(`ietf push: draft ${draft}: each open track is PUBLISHed; FORWARD 0 sends nothing (no cursor) until a REQUEST_UPDATE forwards it`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const relayP = acceptIetf(pair.server, { log: () => {} });
    const idle = new TrackProducer();
    const read = new TrackProducer();
    idle.writeGroup(0, [enc.encode("idle 0")]);
    read.writeGroup(0, [enc.encode("read 0")]);
    const tracks = fixedTracks([
      { path: "room/1", track: "idle", producer: idle },
      { path: "room/1", track: "read", producer: read },
    ]);
    const pub = await connectIetf(pair.client, draft, { log: () => {}, push: tracks });
    try {
      const relay = await relayP;
      // Both pushes arrive as subscriptions already running: no SUBSCRIBE will be needed.
      await until(() => relay.stats.upstreamSubscriptionsOpened === 2, "both PUBLISHes taken");
      const sub = relay.subscribe("room/1", "read");
      const it = sub[Symbol.asyncIterator]();
      // The claim's REQUEST_UPDATE forwards "read"; its groups from the latest on arrive.
      const first = await within(it.next(), 5000, "the first group of the claimed track");
      assert.equal(dec.decode(first.value!.frames[0]), "read 0");
      read.writeGroup(1, [enc.encode("read 1")]);
      const second = await within(it.next(), 5000, "the next group");
      assert.equal(dec.decode(second.value!.frames[0]), "read 1");
      // The acceptances both went before the claim's update (in draft 16 on the one control
      // stream): the track nobody claimed was answered FORWARD 0, so nothing of it went and no
      // cursor holds it open.
      idle.writeGroup(1, [enc.encode("idle 1")]);
      assert.equal(idle.subscribers, 0, "no cursor on the paused track");
      assert.equal(read.subscribers, 1);
      assert.equal(pub.stats.subscriptionsOpened, 1, "one pushed subscription forwarded");
      assert.equal(relay.stats.upstreamSubscriptionsOpened, 2, "no SUBSCRIBE was sent");
      // The track closing ends its push (PUBLISH_DONE): the subscription finishes.
      tracks.close({ path: "room/1", track: "read", producer: read });
      read.close();
      for (let g = await within(it.next(), 5000, "the end"); !g.done;) {
        g = await within(it.next(), 5000, "the end");
      }
      assert.ok(!pub.isClosed && !relay.isClosed);
    } finally {
      await pair.stop();
    }
  });
}

// A relay continuing a track (its subscription names a start group) claims the push from that
// group: the REQUEST_UPDATE that forwards it carries the start, and the groups the track still
// holds from there are sent, not only those from the latest on.
for (const draft of [16, 20] as const) {
  Deno.test(`ietf push: draft ${draft}: a claim from a start group is served from that group`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const relayP = acceptIetf(pair.server, { log: () => {} });
    const track = new TrackProducer();
    for (let g = 0; g <= 5; g++) track.writeGroup(g, [enc.encode(`g${g}`)]);
    await connectIetf(pair.client, draft, {
      log: () => {},
      push: fixedTracks([{ path: "room/1", track: "t", producer: track }]),
    });
    try {
      const relay = await relayP;
      await until(() => relay.stats.upstreamSubscriptionsOpened === 1, "the PUBLISH taken");
      const it = relay.subscribe("room/1", "t", { start: 2 })[Symbol.asyncIterator]();
      const got: number[] = [];
      while (got.length < 4) {
        const g = await within(it.next(), 5000, `group ${got.length + 2}`);
        got.push(g.value!.sequence);
      }
      assert.deepEqual(got.sort((a, b) => a - b), [2, 3, 4, 5]);
    } finally {
      await pair.stop();
    }
  });
}

// A relay other than sluice may accept a push with its own priority and range: a raw draft-16
// server of our codec answers PUBLISH_OK with SUBSCRIBER_PRIORITY 7 and an absolute filter from
// group 3, and the groups come from 3 on, each header carrying priority 7.
Deno.test("ietf push: draft 16: the acceptance's priority and start group are what is sent", async () => {
  const pair = await quicPair(ALPN[16]);
  const track = new TrackProducer();
  for (let g = 0; g <= 5; g++) track.writeGroup(g, [enc.encode(`g${g}`)]);
  const pubP = connectIetf(pair.client, 16, {
    log: () => {},
    push: fixedTracks([{ path: "room/1", track: "t", producer: track }]),
  });
  try {
    const control = await pair.server.acceptBidi();
    assert.ok(control);
    const r = new StreamReader(control.readable);
    const w = control.writable.getWriter();
    assert.equal((await c.readControl(r, 16))?.type, c.Msg.ClientSetup);
    const grant = new Map([[c.SetupParam.MaxRequestId, 100n]]);
    await w.write(
      c.frameControl(
        c.Msg.ServerSetup,
        c.encodeServerSetup({ version: 0, params: grant }, 16),
        16,
      ),
    );
    await pubP;
    let publish;
    while (!publish) {
      const m = await within(c.readControl(r, 16), 5000, "the PUBLISH");
      assert.ok(m);
      if (m.type === c.Msg.Publish) publish = c.decodePublish(m.body, 16);
    }
    assert.equal(publish.track, "t");
    await w.write(c.publishOk(publish.requestId, 16, {
      priority: 7,
      filter: { kind: "absolute", startGroup: 3, startObject: 0 },
    }));
    const got = new Map<number, number>();
    while (got.size < 3) {
      const s = await within(pair.server.acceptUni(), 5000, "a subgroup stream");
      assert.ok(s);
      const sr = new StreamReader(s.readable);
      const h = await c.readSubgroupHeader(sr, (await sr.u8())!, 16);
      assert.equal(h.trackAlias, publish.trackAlias);
      got.set(h.group, h.priority);
      sr.cancel();
    }
    assert.deepEqual([...got.entries()].sort(([a], [b]) => a - b), [[3, 7], [4, 7], [5, 7]]);
  } finally {
    await pair.stop();
  }
});

// A relay that refuses the PUBLISH (here: it takes no namespace from this peer; @moq/net answers
// NOT_SUPPORTED) still has the track by SUBSCRIBE, as before pushes existed.
for (const draft of [16, 20] as const) {
  Deno.test(`ietf push: draft ${draft}: a refused PUBLISH leaves the track to SUBSCRIBE`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const relayP = acceptIetf(pair.server, { log: () => {}, acceptAnnounce: () => false });
    const track = new TrackProducer();
    track.writeGroup(0, [enc.encode("g0")]);
    const logs: string[] = [];
    const pub = await connectIetf(pair.client, draft, {
      log: (l) => logs.push(l),
      serve: () => track,
      push: fixedTracks([{ path: "room/1", track: "t", producer: track }]),
    });
    try {
      const relay = await relayP;
      await until(() => logs.some((l) => l.includes("PUBLISH refused")), "the refusal");
      const it = relay.subscribe("room/1", "t")[Symbol.asyncIterator]();
      const g = await within(it.next(), 5000, "a group by SUBSCRIBE");
      assert.equal(dec.decode(g.value!.frames[0]), "g0");
      assert.equal(pub.stats.tracksPushed, 0);
      assert.equal(pub.stats.subscriptionsOpened, 1);
    } finally {
      await pair.stop();
    }
  });
}

async function unframe(bytes: Uint8Array, draft: 16 | 20): Promise<c.ControlMessage> {
  const m = await c.readControl(new StreamReader(ReadableStream.from([bytes])), draft);
  assert.ok(m);
  return m;
}

// The acceptance's fields on the wire, per draft: what a relay other than sluice may ask.
for (const draft of [16, 20] as const) {
  Deno.test(`ietf push: draft ${draft}: PUBLISH_OK / REQUEST_OK carries forward, priority, group order and filter; absent ones default`, async () => {
    const framed = c.publishOk(3n, draft, {
      forward: false,
      priority: 7,
      groupOrder: 2,
      filter: { kind: "absolute", startGroup: 4, startObject: 0 },
    });
    const m = await unframe(framed, draft);
    assert.equal(m.type, draft < 17 ? c.Msg.PublishOk : c.Msg.RequestOk);
    assert.deepEqual(c.decodePublishOk(m.body, draft), {
      forward: false,
      priority: 7,
      groupOrder: 2,
      filter: { kind: "absolute", startGroup: 4, startObject: 0 },
    });
    const bare = await unframe(c.publishOk(3n, draft), draft);
    assert.deepEqual(c.decodePublishOk(bare.body, draft), {
      forward: true,
      priority: 128,
      groupOrder: 0,
    });
  });
}
