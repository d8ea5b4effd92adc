// TRACK_STATUS answered by our IETF session, drafts 14, 16 and 20, over real
// QUIC with a raw client (@moq/net 0.3.4 answers TRACK_STATUS as a publisher
// but never asks one): the track's largest location, no objects and no
// subscription left behind, and refusals with the draft's codes.
import assert from "node:assert/strict";
import { acceptIetf, ietfCodec as c, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";

const enc = new TextEncoder();
const ALPN = { 14: "moq-00", 16: "moqt-16", 20: "moqt-20" } as const;

const status = (requestId: bigint, track: string, draft: 14 | 16 | 20): Uint8Array =>
  c.encodeSubscribe({
    requestId,
    path: "room/1",
    track,
    priority: 0,
    groupOrder: 0,
    forward: true,
    filter: { kind: "largest-object" },
  }, draft);

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf track status: draft ${draft}: the largest location, or none yet; unknown tracks refused`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const chat = new TrackProducer();
    for (let g = 0; g < 5; g++) chat.writeGroup(g, [enc.encode("a"), enc.encode("b")]);
    const empty = new TrackProducer();
    const moqP = acceptIetf(pair.server, {
      log: () => {},
      serve: (r) => (r.track === "chat" ? chat : r.track === "empty" ? empty : "not_found"),
    });
    try {
      const raw = await rawClient(pair.client, draft);
      const moq = await moqP;
      const ok = await (await raw.request(c.Msg.TrackStatusRequest, status(0n, "chat", draft)))();
      assert.deepEqual(c.decodeTrackStatusOk(ok.type, ok.body, draft), { group: 4, object: 1 });
      const none =
        await (await raw.request(c.Msg.TrackStatusRequest, status(2n, "empty", draft)))();
      assert.equal(c.decodeTrackStatusOk(none.type, none.body, draft), undefined);
      const refused = await (await raw.request(c.Msg.TrackStatusRequest, status(4n, "x", draft)))();
      assert.equal(refused.type, draft < 16 ? c.Msg.TrackStatusError : c.Msg.RequestError);
      assert.equal(
        c.decodeRequestError(refused.body, draft, 4n).code,
        draft < 16 ? 0x4 : 0x10,
      );
      assert.equal(moq.stats.subscriptionsOpened, 0, "no subscription");
      assert.ok(!moq.isClosed);
    } finally {
      await pair.stop();
    }
  });
}
