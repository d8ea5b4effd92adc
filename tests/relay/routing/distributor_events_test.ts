// The distributor decides nothing about its track: it reports what happened, in order, and ends
// only when told to. RelayCore's reactions are checked in core_test.ts and route_switch_test.ts.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { TrackDistributor } from "../../../src/relay/routing/distributor.ts";
import type { TrackEvent } from "../../../src/relay/routing/track_event.ts";
import { RateMeter } from "../../../src/relay/metrics/rate_meter.ts";
import { FakeSource, group, settle, take } from "./_fake_source.ts";

function distributor(idleMs: number): TrackDistributor {
  return new TrackDistributor({
    path: "b",
    track: "t",
    cacheSize: 8,
    metrics: createRelayMetrics(),
    now: () => 0,
    idleMs,
  });
}

Deno.test("an upstream that ends is reported and the track stays until the relay ends it", async () => {
  const d = distributor(60_000);
  const src = new FakeSource();
  const meter = new RateMeter(() => 0);
  d.start(await src.subscribe("t"), src, meter);
  const sub = d.producer.cursor(undefined, 8);
  const events = d.events[Symbol.asyncIterator]();
  src.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  assert.ok(meter.bitsPerSecond() > 0, "the route's meter got the group's bytes");
  src.last.end();
  const e = await events.next();
  assert.deepEqual(e.value, { kind: "upstream-ended", source: src } satisfies TrackEvent);
  assert.equal(d.ended, false, "the distributor does not decide the track ends");
  d.close();
  assert.equal((await events.next()).done, true, "its events end with it");
  assert.equal(await sub.next(), undefined);
});

Deno.test("a track left without subscribers reports idle instead of ending itself", async () => {
  const d = distributor(0);
  const src = new FakeSource();
  d.start(await src.subscribe("t"), src);
  const events = d.events[Symbol.asyncIterator]();
  d.producer.cursor(undefined, 8).close();
  assert.deepEqual((await events.next()).value, { kind: "idle" });
  await settle();
  assert.equal(d.ended, false);
  assert.equal(src.upstreams[0]!.closed, false, "the upstream is kept until the relay decides");
  d.close();
  assert.equal(src.upstreams[0]!.closed, true);
});

Deno.test("a switch whose new upstream fails falls back to a running one, not to an ended one", async () => {
  const d = distributor(60_000);
  const a = new FakeSource(1);
  const b = new FakeSource(0, "192.0.2.9:9");
  d.start(await a.subscribe("t"), a);
  a.last.push(group(1));
  await settle();
  assert.deepEqual(d.retarget(b), { start: 2, switched: true });
  assert.equal(d.retarget(b), undefined, "already its target");
  assert.equal(d.fallBack(), true, "the upstream through a still runs");
  assert.equal(d.source, a);
  d.retarget(b);
  a.last.end();
  await settle();
  assert.equal(d.fallBack(), false, "nothing left to fall back to");
  d.close();
  assert.equal(d.retarget(a), undefined, "an ended distributor takes no new route");
});
