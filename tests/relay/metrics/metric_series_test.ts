// Metric series and outside input: subscriptions the upstream refuses make no
// per-track series, a track's series leave /metrics when the relay stops
// serving it, and every labelled metric holds a bounded number of series.
import assert from "node:assert/strict";
import { TrackProducer } from "../../../src/moq/mod.ts";
import { createRelayMetrics, MAX_SERIES_PER_METRIC } from "../../../src/relay/metrics/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { until } from "../../support/wait.ts";

for (const alpn of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${alpn}: 200 subscriptions to tracks the publisher refuses leave /metrics as it was`, async () => {
    using _q = quiet();
    const t = await startTestRelay({ shippedTimings: true });
    const producer = new TrackProducer({ cache: 8 });
    const pub = await dialOurs(t.port, {
      moq: { serve: (r) => (r.path === "room/1" && r.track === "chat" ? producer : "not_found") },
    });
    pub.announce("room/1");
    const client = await dialOurs(t.port, { alpn });
    try {
      await seeAnnounced(client, "room/1");
      const before = await (await t.get("/metrics")).text();
      for (let i = 0; i < 200; i++) {
        const s = client.subscribe("room/1", `made-up-${i}`);
        await assert.rejects(s.ready);
      }
      const after = await (await t.get("/metrics")).text();
      assert.ok(!after.includes("made-up-"), "no series names a refused track");
      assert.equal(
        t.relay.metrics.subscribeErrorsTotal.value({ code: "upstream_error" }) +
          t.relay.metrics.subscribeErrorsTotal.value({ code: "not_found" }),
        200,
        "every refusal is counted",
      );
      // Only the counters of the refusals grew, not the number of lines.
      const lines = (text: string) => text.split("\n").filter((l) => !l.startsWith("#")).length;
      assert.ok(lines(after) - lines(before) <= 2, `${lines(before)} lines, then ${lines(after)}`);
    } finally {
      client.close();
      pub.close();
      await t.stop();
    }
  });
}

Deno.test("a track's series leave /metrics once the relay no longer serves it (shipped idle time)", async () => {
  using _q = quiet();
  const t = await startTestRelay({ shippedTimings: true });
  const producer = new TrackProducer({ cache: 8 });
  const pub = await dialOurs(t.port, {
    moq: { serve: (r) => (r.path === "room/1" && r.track === "chat" ? producer : "not_found") },
  });
  pub.announce("room/1");
  const client = await dialOurs(t.port);
  try {
    await seeAnnounced(client, "room/1");
    const s = client.subscribe("room/1", "chat");
    await s.ready;
    producer.writeGroup(1, new TextEncoder().encode("x"));
    const it = s[Symbol.asyncIterator]();
    await it.next();
    const served = await (await t.get("/metrics")).text();
    assert.match(served, /track_upstream_requests_total\{path="\/room\/1",track="chat"\} 1/);
    assert.match(served, /ingress_bytes_total\{track="\/room\/1\/chat"\}/);
    s.close();
    // The upstream subscription is released 5 s after its last subscriber left.
    await until(() => t.relay.core.distributors().length === 0, "the track to be released");
    const gone = await (await t.get("/metrics")).text();
    assert.ok(!gone.includes('track="chat"'), "no series of the released track");
    assert.ok(!gone.includes('track="/room/1/chat"'), "no series of the released track");
  } finally {
    client.close();
    pub.close();
    await t.stop();
  }
});

Deno.test("a labelled relay metric holds at most MAX_SERIES_PER_METRIC series and counts the rest", () => {
  const m = createRelayMetrics();
  const extra = 250;
  for (let i = 0; i < MAX_SERIES_PER_METRIC + extra; i++) {
    m.trackUpstreamRequestsTotal.inc({ path: "/p", track: `t${i}` });
    m.groupDeliverySeconds.observe({ track: `/p/t${i}` }, 0.01);
  }
  assert.equal(m.trackUpstreamRequestsTotal.size, MAX_SERIES_PER_METRIC);
  assert.equal(m.groupDeliverySeconds.size, MAX_SERIES_PER_METRIC);
  const overflow = (metric: string) =>
    m.metricSeriesOverflowsTotal.value({ metric: `sluice_relay_${metric}` });
  assert.equal(overflow("track_upstream_requests_total"), extra);
  assert.equal(overflow("group_delivery_seconds"), extra);
  // A series that exists still counts; a removed one makes room again.
  m.trackUpstreamRequestsTotal.inc({ path: "/p", track: "t0" });
  assert.equal(m.trackUpstreamRequestsTotal.value({ path: "/p", track: "t0" }), 2);
  m.trackUpstreamRequestsTotal.remove({ path: "/p", track: "t0" });
  m.trackUpstreamRequestsTotal.inc({ path: "/p", track: "new" });
  assert.equal(m.trackUpstreamRequestsTotal.value({ path: "/p", track: "new" }), 1);
  assert.match(m.registry.render(), /sluice_relay_metric_series_overflows_total\{metric=/);
});
