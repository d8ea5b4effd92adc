// FETCH through the relay by an IETF (draft 14) subscriber: of a moq-lite
// publisher's track that the relay has not cached, so each group is asked of
// the publisher upstream, and of groups a subscription left in its cache.
import assert from "node:assert/strict";
import { ietfCodec as c, TrackProducer } from "../../src/moq/mod.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { dialOurs, rawIetf, readFetchStream, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { within } from "../support/wait.ts";

const enc = new TextEncoder();

Deno.test("ietf fetch: a draft-14 FETCH through the relay reaches the moq-lite publisher upstream", async () => {
  using _q = quiet();
  const relay = await startTestRelay();
  const producer = new TrackProducer({ cache: 32 });
  for (let g = 1; g <= 6; g++) {
    producer.writeGroup(g, [enc.encode(`g${g} a`), enc.encode(`g${g} b`)]);
  }
  const pub = await dialOurs(relay.port, { moq: { serve: () => producer } });
  const ours = await dialOurs(relay.port);
  const raw = await rawIetf(relay.port);
  try {
    pub.announce("lite/records");
    await within(seeAnnounced(ours, "lite/records"), 10_000, "the announcement");
    const fetch = (requestId: bigint, from: number, to: number) =>
      raw.send(
        c.Msg.Fetch,
        c.encodeFetch({
          requestId,
          priority: 0,
          groupOrder: 1,
          range: {
            kind: "standalone",
            path: "lite/records",
            track: "t",
            start: { group: from, object: 0 },
            end: { group: to },
          },
        }, 14),
      );
    await fetch(0n, 2, 4);
    const ok = await raw.answer(c.Msg.FetchOk, c.Msg.FetchError);
    assert.equal(ok.type, c.Msg.FetchOk);
    const got = await readFetchStream(raw.session, 14);
    assert.equal(got.id, 0n);
    assert.deepEqual(got.objects, [
      "2.0 g2 a",
      "2.1 g2 b",
      "3.0 g3 a",
      "3.1 g3 b",
      "4.0 g4 a",
      "4.1 g4 b",
    ]);
    // A second FETCH of the same track, now that the relay has a distributor for it.
    await fetch(2n, 5, 6);
    assert.equal((await raw.answer(c.Msg.FetchOk, c.Msg.FetchError)).type, c.Msg.FetchOk);
    assert.deepEqual((await readFetchStream(raw.session, 14)).objects, [
      "5.0 g5 a",
      "5.1 g5 b",
      "6.0 g6 a",
      "6.1 g6 b",
    ]);
  } finally {
    raw.session.close(0, "");
    ours.close(0, "");
    pub.close(0, "");
    await relay.stop();
  }
});
