// SUBSCRIBE_UPDATE (draft 14) / REQUEST_UPDATE (drafts 16 and 20) applied by
// our IETF session, over real QUIC with a raw client (@moq/net 0.3.4 never
// sends one): forward 0 pauses the subscription (groups pass unsent), forward
// 1 resumes it, a new priority is in the next groups' headers, and an end
// group stops what is sent; PUBLISH_DONE counts the streams that went.
import assert from "node:assert/strict";
import { acceptIetf, ietfCodec as c, TrackProducer } from "../../../src/moq/mod.ts";
import { StreamReader } from "../../../src/wire/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";
import { until } from "../../support/wait.ts";

const enc = new TextEncoder();
const ALPN = { 14: "moq-00", 16: "moqt-16", 20: "moqt-20" } as const;

// Every subgroup stream's group and priority, as they arrive.
function collectGroups(client: Session, draft: 14 | 16 | 20): Map<number, number> {
  const got = new Map<number, number>();
  (async () => {
    for (;;) {
      const s = await client.acceptUni();
      if (!s) return;
      const r = new StreamReader(s.readable);
      const type = await r.u8();
      // Draft 20's first is the peer's SETUP stream: not a group.
      if (type === undefined || !c.isSubgroupType(type, draft)) continue;
      const h = await c.readSubgroupHeader(r, type, draft);
      got.set(h.group, h.priority);
      r.cancel();
    }
  })().catch(() => {});
  return got;
}

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf update: draft ${draft}: forward pauses and resumes, priority and end group apply`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const track = new TrackProducer();
    const write = (g: number) => track.writeGroup(g, [enc.encode(`g${g}`)]);
    write(0);
    const moqP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
    try {
      const raw = await rawClient(pair.client, draft);
      const moq = await moqP;
      const got = collectGroups(pair.client, draft);
      const sub = await raw.request(
        c.Msg.Subscribe,
        c.encodeSubscribe({
          requestId: 0n,
          path: "room/1",
          track: "chat",
          priority: 3,
          groupOrder: 0,
          forward: true,
          filter: { kind: "largest-object" },
        }, draft),
      );
      assert.equal((await sub()).type, c.Msg.SubscribeOk);
      await until(() => got.has(0), "group 0");
      let id = 2n;
      // Draft 14 has no answer to an update: a TRACK_STATUS after it is the barrier.
      const update = async (u: Omit<c.SubscribeUpdate, "requestId" | "existing">) => {
        const requestId = id;
        id += 2n;
        const full = draft < 16
          ? { filter: { kind: "absolute", startGroup: 0, startObject: 0 } as const, ...u }
          : u;
        await sub.send(
          c.Msg.SubscribeUpdate,
          c.encodeSubscribeUpdate({ requestId, existing: 0n, priority: 3, ...full }, draft),
        );
        if (draft >= 16) {
          assert.equal((await sub()).type, c.Msg.RequestOk, "the update is accepted");
          return;
        }
        const barrier = await raw.request(
          c.Msg.TrackStatusRequest,
          c.encodeSubscribe({
            requestId: id,
            path: "room/1",
            track: "chat",
            priority: 0,
            groupOrder: 0,
            forward: true,
            filter: { kind: "largest-object" },
          }, draft),
        );
        id += 2n;
        assert.equal((await barrier()).type, c.Msg.TrackStatus);
      };
      await update({ forward: false });
      write(1);
      write(2);
      await update({
        forward: true,
        priority: 9,
        filter: { kind: "absolute", startGroup: 0, startObject: 0, endGroup: 4 },
      });
      write(3);
      write(4);
      write(5);
      track.close();
      const done = await sub();
      assert.equal(done.type, c.Msg.PublishDone);
      assert.equal(c.decodePublishDone(done.body, draft, 0n).streams, 3, "groups 0, 3 and 4");
      await until(() => got.size === 3, "three groups");
      assert.deepEqual([...got.entries()].sort(), [[0, 3], [3, 9], [4, 9]]);
      assert.ok(!moq.isClosed);
    } finally {
      await pair.stop();
    }
  });
}

Deno.test("ietf update: draft 14: an update that widens the range closes the session (PROTOCOL_VIOLATION)", async () => {
  const pair = await quicPair(ALPN[14]);
  const track = new TrackProducer();
  track.writeGroup(0, [enc.encode("g0")]);
  const moqP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
  try {
    const raw = await rawClient(pair.client, 14);
    const moq = await moqP;
    const sub = await raw.request(
      c.Msg.Subscribe,
      c.encodeSubscribe({
        requestId: 0n,
        path: "a",
        track: "t",
        priority: 0,
        groupOrder: 0,
        forward: true,
        filter: { kind: "absolute", startGroup: 0, startObject: 0, endGroup: 3 },
      }, 14),
    );
    assert.equal((await sub()).type, c.Msg.SubscribeOk);
    await sub.send(
      c.Msg.SubscribeUpdate,
      c.encodeSubscribeUpdate({
        requestId: 2n,
        existing: 0n,
        priority: 0,
        forward: true,
        filter: { kind: "absolute", startGroup: 0, startObject: 0, endGroup: 9 },
      }, 14),
    );
    const info = await pair.client.closed;
    assert.equal(info.code, 0x3);
    assert.equal(moq.stats.protocolErrors, 1);
  } finally {
    await pair.stop();
  }
});
