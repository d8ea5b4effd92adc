// Unit tests of routing and fan-out against in-process upstreams; the same
// behaviour is checked end to end over real sessions in relay_test.ts.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { RelayCore } from "../../../src/relay/routing/relay_core.ts";
import { SubscribeError } from "../../../src/relay/routing/upstream_request.ts";
import type { RouteChange } from "../../../src/relay/routing/route_table.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { FakeSource, group, take } from "./_fake_source.ts";

// Idle 0 and orphan 0 (shipped 5 s and RELAY_PUBLISHER_GRACE_MS, 10 s): a track ends as soon as
// its last subscriber leaves or its route ends, so no case waits or leaves a timer running.
// route_switch_test.ts has a case at the shipped settings.
function setup(cacheSize = 8): { core: RelayCore; metrics: ReturnType<typeof createRelayMetrics> } {
  const metrics = createRelayMetrics();
  let t = 0;
  const core = new RelayCore({ metrics, cacheSize, now: () => (t += 1), idleMs: 0, orphanMs: 0 });
  return { core, metrics };
}

Deno.test("one upstream subscription is shared by every downstream subscriber", async () => {
  const { core, metrics } = setup();
  const src = new FakeSource();
  const ann = core.routes.announce("room/1", src);
  const [pa, pb] = await Promise.all([
    core.source("room/1", "chat"),
    core.source("room/1", "chat"),
  ]);
  assert.equal(pa, pb);
  assert.deepEqual(src.subscribes, ["chat"]);
  const a = pa.cursor(undefined, 8);
  const b = pb.cursor(undefined, 8);
  for (let i = 1; i <= 3; i++) src.last.push(group(i));
  assert.deepEqual(await take(a, 3), [1, 2, 3]);
  assert.deepEqual(await take(b, 3), [1, 2, 3]);
  const labels = { path: "/room/1", track: "chat" };
  assert.equal(metrics.trackUpstreamRequestsTotal.value(labels), 1);
  assert.equal(metrics.trackDistributorReusesTotal.value(labels), 1);
  const f = families(metrics.registry.render());
  assert.equal(sampleValue(f, "sluice_relay_track_subscriptions_active", labels), 2);
  assert.equal(sampleValue(f, "sluice_relay_subscribers_active"), 2);
  assert.equal(sampleValue(f, "sluice_relay_buffer_depth_groups", { track: "/room/1/chat" }), 3);
  // Handing groups to cursors sends nothing: egress_bytes_total counts what subscribers'
  // sessions send (checked over real sessions in cut_through_test.ts and relay_test.ts).
  const egress = sampleValue(f, "sluice_relay_egress_bytes_total", { track: "/room/1/chat" });
  assert.equal(egress, undefined);
  assert.equal(sampleValue(f, "sluice_relay_ingress_bytes_total", { track: "/room/1/chat" }), 6);
  a.close();
  b.close();
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(src.upstreams[0]!.closed, true, "the last subscriber leaving releases upstream");
  assert.equal(core.distributors().length, 0);
  ann.end();
});

Deno.test("a late joiner starts at the latest complete group", async () => {
  const { core } = setup();
  const src = new FakeSource();
  const ann = core.routes.announce("b", src);
  const producer = await core.source("b", "t");
  const first = producer.cursor(undefined, 8);
  for (let i = 1; i <= 5; i++) src.last.push(group(i));
  assert.deepEqual(await take(first, 5), [1, 2, 3, 4, 5]);
  const late = (await core.source("b", "t")).cursor(undefined, 8);
  assert.deepEqual(await take(late, 1), [5]);
  src.last.push(group(6));
  assert.deepEqual(await take(late, 1), [6]);
  first.close();
  late.close();
  ann.end();
});

Deno.test("a slow subscriber is skipped forward and never slows a fast one", async () => {
  const { core, metrics } = setup(4);
  const src = new FakeSource();
  const ann = core.routes.announce("b", src);
  const producer = await core.source("b", "t");
  const fast = producer.cursor(undefined, 4);
  const slow = producer.cursor(undefined, 4);
  const fastGot: number[] = [];
  for (let i = 1; i <= 20; i++) {
    src.last.push(group(i));
    fastGot.push(...await take(fast, 1));
  }
  assert.deepEqual(fastGot, Array.from({ length: 20 }, (_, i) => i + 1));
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  // The slow one only now asks: it is past the ring, so it jumps to the newest group.
  assert.deepEqual(await take(slow, 1), [20]);
  assert.equal(metrics.subscriberSkipsTotal.value(), 1);
  assert.equal(slow.skipped, 19);
  fast.close();
  slow.close();
  ann.end();
});

Deno.test("the publisher going away ends the broadcast for subscribers and watchers", async () => {
  const { core, metrics } = setup();
  const src = new FakeSource();
  const events: Pick<RouteChange, "kind" | "path">[] = [];
  const unwatch = core.routes.onChange((e) => {
    if (e.path.startsWith("room")) events.push({ kind: e.kind, path: e.path });
  });
  const ann = core.routes.announce("room/1", src);
  core.routes.announce("other/1", new FakeSource()).end();
  const c = (await core.source("room/1", "chat")).cursor(undefined, 8);
  src.last.push(group(1));
  assert.deepEqual(await take(c, 1), [1]);
  assert.equal(metrics.broadcastsActive.value(), 1);
  ann.end();
  assert.equal(await c.next(), undefined, "the subscriber's track ends");
  assert.equal(src.upstreams[0]!.closed, true);
  assert.deepEqual(events, [
    { kind: "installed", path: "room/1" },
    { kind: "ended", path: "room/1" },
  ]);
  assert.equal(core.routes.get("room/1"), undefined);
  assert.equal(metrics.broadcastsActive.value(), 0);
  await assert.rejects(core.source("room/1", "chat"), SubscribeError);
  c.close();
  unwatch();
});

Deno.test("subscribing to an unknown broadcast or a failing track is refused with a code", async () => {
  const { core, metrics } = setup();
  await assert.rejects(
    core.source("nope", "t"),
    (e: unknown) => e instanceof SubscribeError && e.code === "not_found",
  );
  const src = new FakeSource();
  src.fail = true;
  const ann = core.routes.announce("b", src);
  await assert.rejects(
    core.source("b", "t"),
    (e: unknown) => e instanceof SubscribeError && e.code === "upstream_error",
  );
  assert.equal(metrics.subscribeErrorsTotal.value({ code: "not_found" }), 1);
  assert.equal(metrics.subscribeErrorsTotal.value({ code: "upstream_error" }), 1);
  // A track the upstream refused makes no series of its own: a client naming made-up tracks
  // cannot grow /metrics (subscribe_errors_total{code} counts the refusal).
  for (
    const metric of [metrics.trackUpstreamRequestsTotal, metrics.trackUpstreamRequestErrorsTotal]
  ) {
    assert.equal(metric.has({ path: "/b", track: "t" }), false, metric.name);
  }
  assert.equal(metrics.trackUpstreamRequestDurationSeconds.has({ path: "/b", track: "t" }), false);
  ann.end();
});

Deno.test("a second announcement is retained and promoted when the incumbent ends", () => {
  const { core, metrics } = setup();
  const first = new FakeSource(1);
  const second = new FakeSource(1);
  const a1 = core.routes.announce("b", first);
  const a2 = core.routes.announce("b", second);
  assert.equal(a1.active, true);
  assert.equal(a2.active, false);
  assert.equal(a2.retained, true);
  // Same hops, no RTT or bitrate measured: the incumbent stays.
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "equal_or_unknown" }), 1);
  assert.equal(metrics.routesRetained.value(), 1);
  a1.end();
  assert.equal(core.routes.get("b")?.source, second);
  assert.equal(metrics.routePromotionsTotal.value(), 1);
  assert.equal(metrics.routesRetained.value(), 0);
  const better = new FakeSource(0);
  const a3 = core.routes.announce("b", better);
  assert.equal(a3.active, true);
  assert.equal(metrics.routeReplacementsTotal.value(), 1);
  assert.equal(a2.retained, true, "the replaced route is kept as the alternate");
  a3.end();
  a2.end();
  assert.equal(core.routes.routes().length, 0);
});
