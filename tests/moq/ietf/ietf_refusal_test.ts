// Refusals of our IETF session at its bounds, against the draft texts' error registries, over
// real QUIC with a raw client of our codec (@moq/net surfaces no refusal code). The relay's
// refusals of a SUBSCRIBE, one row per reason, are in tests/relay/ietf_refusal_test.ts.
import assert from "node:assert/strict";
import { acceptIetf, ietfCodec as c, type IetfDraft, TrackProducer } from "../../../src/moq/mod.ts";
import { MAX_SERVED_SUBSCRIPTIONS } from "../../../src/moq/ietf/core.ts";
import { StreamReader } from "../../../src/wire/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";

const ALPN = { 14: "moq-00", 16: "moqt-16", 20: "moqt-20" } as const;

const subscribe = (id: bigint, track: string, draft: IetfDraft) =>
  c.encodeSubscribe({
    requestId: id,
    path: "room/1",
    track,
    priority: 0,
    groupOrder: 0,
    forward: true,
    filter: { kind: "largest-object" },
  }, draft);

// Drafts 14 and 16 carry SUBSCRIBEs on the control stream, so the session's bound is reached.
// Draft 20's (EXCESSIVE_LOAD, 0x9) is not over native QUIC: each SUBSCRIBE is a stream of its own,
// and the transport lets a peer open 100 at once.
for (const draft of [14, 16] as const) {
  Deno.test(`ietf refusals: draft ${draft}: a SUBSCRIBE over the session's bound is refused INTERNAL_ERROR`, async () => {
    const pair = await quicPair(ALPN[draft]);
    // Every subscription waits on its source, so each stays served.
    const moqP = acceptIetf(pair.server, { log: () => {}, serve: () => new Promise(() => {}) });
    try {
      const raw = await rawClient(pair.client, draft);
      await moqP;
      for (let i = 0; i < MAX_SERVED_SUBSCRIPTIONS; i++) {
        await raw.request(c.Msg.Subscribe, subscribe(BigInt(2 * i), `t${i}`, draft));
      }
      const id = BigInt(2 * MAX_SERVED_SUBSCRIPTIONS);
      const m = await (await raw.request(c.Msg.Subscribe, subscribe(id, "over", draft)))();
      assert.equal(m.type, draft < 16 ? c.Msg.SubscribeError : c.Msg.RequestError);
      // INTERNAL_ERROR 0x0: neither draft has a better code.
      assert.equal(c.decodeRequestError(m.body, draft).code, 0x0);
    } finally {
      await pair.stop();
    }
  });
}

// A SUBSCRIBE_NAMESPACE for a prefix the session already follows: draft 14's
// NAMESPACE_PREFIX_OVERLAP (0x5), drafts 16 and 20's PREFIX_OVERLAP (0x30; 0x5 is
// EXPIRED_AUTH_TOKEN there).
for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf refusals: draft ${draft}: a namespace subscription of a prefix already followed is refused PREFIX_OVERLAP`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const moqP = acceptIetf(pair.server, { log: () => {} });
    try {
      const raw = await rawClient(pair.client, draft);
      await moqP;
      const ask = c.encodeNamespaceRequest({ requestId: 0n, path: "room" }, draft, true);
      const again = c.encodeNamespaceRequest({ requestId: 2n, path: "room" }, draft, true);
      if (draft === 14) {
        const ok = await (await raw.request(c.Msg.SubscribeNamespace, ask))();
        assert.equal(ok.type, c.Msg.SubscribeNamespaceOk);
        const m = await (await raw.request(c.Msg.SubscribeNamespace, again))();
        assert.equal(m.type, c.Msg.SubscribeNamespaceError);
        assert.equal(c.decodeRequestError(m.body, draft).code, 0x5);
        return;
      }
      // Drafts 16 and 20: each on a stream of its own, answered there.
      const type = draft >= 18 ? c.Msg.SubscribeNamespaceStream : c.Msg.SubscribeNamespace;
      const onStream = async (body: Uint8Array) => {
        const s = await pair.client.openBidi();
        await s.writable.getWriter().write(c.frameControl(type, body, draft));
        const m = await c.readControl(new StreamReader(s.readable), draft);
        assert.ok(m);
        return m;
      };
      assert.equal((await onStream(ask)).type, c.Msg.RequestOk);
      const m = await onStream(again);
      assert.equal(m.type, c.Msg.RequestError);
      assert.equal(c.decodeRequestError(m.body, draft, 2n).code, 0x30);
    } finally {
      await pair.stop();
    }
  });
}

// A range whose end group is already complete (the track has a later group) asks for nothing a
// SUBSCRIBE still carries: every draft says the publisher SHOULD answer INVALID_RANGE (draft 14
// SUBSCRIBE_ERROR 0x5, drafts 16 and 20 REQUEST_ERROR 0x11). An end at the largest group is still
// served: that group may be arriving yet.
for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf refusals: draft ${draft}: a SUBSCRIBE whose end group is already past is refused INVALID_RANGE`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const track = new TrackProducer();
    for (let g = 0; g <= 5; g++) track.writeGroup(g, [new TextEncoder().encode(`g${g}`)]);
    const moqP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
    try {
      const raw = await rawClient(pair.client, draft);
      await moqP;
      const ranged = (id: bigint, endGroup: number) =>
        c.encodeSubscribe({
          requestId: id,
          path: "room/1",
          track: "chat",
          priority: 0,
          groupOrder: 0,
          forward: true,
          filter: { kind: "absolute", startGroup: 1, startObject: 0, endGroup },
        }, draft);
      const past = await (await raw.request(c.Msg.Subscribe, ranged(0n, 4)))();
      assert.equal(past.type, draft < 16 ? c.Msg.SubscribeError : c.Msg.RequestError);
      assert.equal(c.decodeRequestError(past.body, draft, 0n).code, draft < 16 ? 0x5 : 0x11);
      const atLargest = await (await raw.request(c.Msg.Subscribe, ranged(2n, 5)))();
      assert.equal(atLargest.type, c.Msg.SubscribeOk, "an end at the largest group is served");
    } finally {
      await pair.stop();
    }
  });
}
