// Subscribers keep their subscription when a broadcast's route changes: the
// distributor moves its one upstream subscription and continues by sequence.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../src/relay/relay_metrics.ts";
import { RelayCore } from "../../src/relay/relay_core.ts";
import { FakeSource, group, settle, take } from "./_fake_source.ts";

function setup(orphanMs = 1000) {
  const metrics = createRelayMetrics();
  const logs: string[] = [];
  const core = new RelayCore({
    metrics,
    cacheSize: 16,
    now: Date.now,
    idleMs: 0,
    orphanMs,
    log: (l) => logs.push(l),
  });
  return { core, metrics, logs };
}

Deno.test("a better route takes over make-before-break: every group once, in order, no skip", async () => {
  const { core, metrics } = setup();
  const far = new FakeSource(2, "192.0.2.1:1");
  const near = new FakeSource(1, "192.0.2.2:2");
  core.routes.announce("b", far);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  for (let i = 1; i <= 3; i++) far.last.push(group(i));
  assert.deepEqual(await take(sub, 3), [1, 2, 3]);
  core.routes.announce("b", near);
  await settle();
  assert.equal(near.upstreams[0]?.start, 4, "the new route is asked for the next group");
  assert.equal(
    far.upstreams[0]?.closed,
    true,
    "the old upstream is released once the new one is open",
  );
  // The new route repeats what the old one already delivered; it is taken once.
  near.last.push(group(3));
  near.last.push(group(4));
  near.last.push(group(5));
  assert.deepEqual(await take(sub, 2), [4, 5]);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  assert.equal(core.distributors().length, 1, "the subscriber's distributor is the same");
  assert.equal(metrics.trackUpstreamRequestsTotal.value({ path: "/b", track: "t" }), 2);
  sub.close();
});

Deno.test("when the route's session dies the alternate is promoted and unrecoverable groups count as skips", async () => {
  const { core, metrics, logs } = setup();
  const a = new FakeSource(1, "192.0.2.1:1");
  const b = new FakeSource(1, "192.0.2.2:2");
  const annA = core.routes.announce("b", a);
  core.routes.announce("b", b);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  for (let i = 1; i <= 4; i++) a.last.push(group(i));
  assert.deepEqual(await take(sub, 4), [1, 2, 3, 4]);
  // The session goes away: its subscription ends first, its announcements a moment later.
  a.dead = true;
  a.last.end(new Error("connection lost"));
  await settle();
  assert.equal(core.distributors().length, 1, "the track waits for the route table to move");
  annA.end();
  await settle();
  assert.equal(b.upstreams[0]?.start, 5);
  // The alternate's relay still has 7 on; 5 and 6 are gone for good.
  b.upstreams[0]!.startGroup = 7;
  b.last.push(group(7));
  b.last.push(group(8));
  assert.deepEqual(await take(sub, 2), [7, 8]);
  assert.equal(metrics.subscriberSkipsTotal.value(), 2);
  assert.equal(metrics.routePromotionsTotal.value(), 1);
  assert.ok(
    logs.some((l) => l.includes("2 group(s) before 7 could not be recovered")),
    logs.join("\n"),
  );
  sub.close();
});

Deno.test("with no alternate the track ends when the route does, or after the orphan wait", async () => {
  const { core } = setup(30);
  const a = new FakeSource(1);
  core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  a.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  a.dead = true;
  a.last.end(new Error("connection lost"));
  // Nobody withdraws the route (its bookkeeping is stuck): the orphan wait ends the track.
  assert.equal(await sub.next(), undefined);
  assert.equal(core.distributors().length, 0);
});

Deno.test("a publisher finishing its track ends the distributor though the route stays", async () => {
  const { core } = setup();
  const a = new FakeSource(0);
  core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  a.last.push(group(1));
  a.last.end();
  assert.deepEqual(await take(sub, 2), [1]);
  assert.equal(core.distributors().length, 0);
});

Deno.test("a route that refuses the track leaves the distributor on its still-working upstream", async () => {
  const { core, logs } = setup();
  const a = new FakeSource(2);
  const b = new FakeSource(1, "192.0.2.9:9");
  b.fail = true;
  core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  a.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  core.routes.announce("b", b);
  await settle();
  a.last.push(group(2));
  assert.deepEqual(await take(sub, 1), [2]);
  assert.ok(logs.some((l) => l.includes("cannot move to 192.0.2.9:9")), logs.join("\n"));
  sub.close();
});
