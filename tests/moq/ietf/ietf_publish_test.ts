// PUBLISH at our IETF session (draft 16), over real QUIC with a raw client of our codec (@moq/net
// 0.3.4 never sends PUBLISH): at most MAX_PUSHED_TRACKS pushed tracks at once per session, the one
// beyond refused; a finished one frees its place. Draft 14's PUBLISH is refused as not supported.
import assert from "node:assert/strict";
import { acceptIetf, ietfCodec as c } from "../../../src/moq/mod.ts";
import { MAX_PUSHED_TRACKS } from "../../../src/moq/ietf/core.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";
import { until } from "../../support/wait.ts";

const publish = (requestId: bigint, track: string, draft: 14 | 16) =>
  c.encodePublish(
    { requestId, path: "room/1", track, trackAlias: requestId, forward: true },
    draft,
  );

Deno.test("ietf publish: draft 16: at most MAX_PUSHED_TRACKS pushed tracks per session; a finished one frees its place", async () => {
  const pair = await quicPair("moqt-16");
  const moqP = acceptIetf(pair.server, { log: () => {} });
  try {
    const raw = await rawClient(pair.client, 16);
    const moq = await moqP;
    for (let i = 0; i < MAX_PUSHED_TRACKS; i++) {
      const ok = await (await raw.request(c.Msg.Publish, publish(BigInt(2 * i), `t${i}`, 16)))();
      assert.equal(ok.type, c.Msg.PublishOk, `PUBLISH ${i} taken`);
    }
    const over = BigInt(2 * MAX_PUSHED_TRACKS);
    const beyond = await raw.request(c.Msg.Publish, publish(over, "over", 16));
    const refused = await beyond();
    assert.equal(refused.type, c.Msg.RequestError);
    assert.equal(c.decodeRequestError(refused.body, 16).code, 0x0, "INTERNAL_ERROR (draft 16)");
    // The first pushed track finishes (PUBLISH_DONE, TRACK_ENDED): its place is free again.
    await beyond.send(
      c.Msg.PublishDone,
      c.encodePublishDone({ requestId: 0n, code: 0x2, streams: 0, reason: "" }, 16),
    );
    let next = over;
    await until(async () => {
      next += 2n; // each try a request of its own
      const m = await (await raw.request(c.Msg.Publish, publish(next, `again${next}`, 16)))();
      return m.type === c.Msg.PublishOk;
    }, "a place freed");
    assert.ok(!moq.isClosed, "the session stays");
  } finally {
    await pair.stop();
  }
});

Deno.test("ietf publish: draft 14: PUBLISH is refused with PUBLISH_ERROR, NOT_SUPPORTED; the session stays", async () => {
  const pair = await quicPair("moq-00");
  const moqP = acceptIetf(pair.server, { log: () => {} });
  try {
    const raw = await rawClient(pair.client, 14);
    const moq = await moqP;
    // Draft 14's PUBLISH form differs; only its leading request id is read before refusing.
    const m = await (await raw.request(c.Msg.Publish, c.encodeRequestId(0n, 14)))();
    assert.equal(m.type, c.Msg.PublishError);
    assert.equal(c.decodeRequestError(m.body, 14).code, 0x3);
    assert.ok(!moq.isClosed);
  } finally {
    await pair.stop();
  }
});
