// What a relay answers to TRACK: the same properties whether the track has a subscription
// yet or not. A funnel's relay session advertises a 5 s max latency; the relay serves such
// a flow-controlled track with its 30 s lag bound (FLOW_LAG_MS) and says so to every
// subscriber. `@moq/net` keeps an unread group only for the max latency TRACK_INFO gave, so
// a subscriber told 5 s (the first ones, who ask TRACK before any subscription exists)
// dropped the groups it read more than 5 s late, which the relay counted as delivered.
import assert from "node:assert/strict";
import { TrackProducer } from "../../../src/moq/mod.ts";
import { FLOW_LAG_MS } from "../../../src/relay/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";

// A funnel's relay session: in-order records, 5 s max latency.
const RECORDS = { ordered: true, maxLatency: 5000 };
// A media track: its max latency passes through as the publisher set it.
const MEDIA = { ordered: false, maxLatency: 5000 };

for (
  const [name, options, served] of [
    ["an in-order track is served with the lag bound", RECORDS, FLOW_LAG_MS],
    ["a media track keeps the publisher's max latency", MEDIA, 5000],
  ] as const
) {
  Deno.test(`relay TRACK before and after the first subscription: ${name}`, async () => {
    using _q = quiet();
    const t = await startTestRelay();
    const producer = new TrackProducer(options);
    const pub = await dialOurs(t.port, {
      moq: { serve: (r) => (r.path === "props/1" && r.track === "t" ? producer : "not_found") },
    });
    pub.announce("props/1");
    const sub = await dialOurs(t.port, { alpn: "moq-lite-05" });
    try {
      await seeAnnounced(sub, "props/1");
      const before = await sub.trackInfo("props/1", "t");
      const track = sub.subscribe("props/1", "t");
      await track.ready;
      const after = await sub.trackInfo("props/1", "t");
      assert.equal(after.maxLatency, served, "with a subscription");
      assert.equal(before.maxLatency, served, "before any subscription");
      assert.equal(before.ordered, options.ordered);
      track.close();
    } finally {
      sub.close();
      pub.close();
      await t.stop();
    }
  });
}
