// Subscribers keep their subscription when a broadcast's route changes: the
// distributor moves its one upstream subscription and continues by sequence.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { RelayCore } from "../../../src/relay/routing/relay_core.ts";
import type { Timers } from "../../../src/timers/mod.ts";
import { RELAY_DEFAULTS } from "../../../src/config/mod.ts";
import { until } from "../../support/wait.ts";
import { FakeSource, group, settle, take } from "./_fake_source.ts";

/** Timers that run gap repair's waits (500 ms) and retries (1, 2, 4, 8 s) within a millisecond. */
const HURRIED: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(ms, 1)),
  clearTimeout: (handle) => clearTimeout(handle as number),
};

// Not the shipped settings, so that each case ends promptly: a ring and subscriber queue of 16
// (shipped 8) hold every group a case pushes; an upstream is released as soon as its last
// subscriber leaves (idle 0, shipped 5 s) and a track with no route ends after 1 s (shipped
// RELAY_PUBLISHER_GRACE_MS, 10 s), so no case leaves a timer running; the ring has no age or
// byte limit. The promise at stake, a route change losing nothing, has a twin at the shipped
// settings at the end of this file.
function setup(orphanMs = 1000, repairTimers?: Timers) {
  const metrics = createRelayMetrics();
  const logs: string[] = [];
  const core = new RelayCore({
    metrics,
    cacheSize: 16,
    now: Date.now,
    idleMs: 0,
    orphanMs,
    log: (l) => logs.push(l),
    ...(repairTimers ? { repairTimers } : {}),
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
  // A group no route can fetch counts as lost after its fifth attempt (15 s at the real waits).
  const { core, metrics, logs } = setup(1000, HURRIED);
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
  // The alternate's relay still has 7 on; 5 and 6 are gone for good (FETCH finds neither).
  b.last.push(group(7));
  b.last.push(group(8));
  assert.deepEqual(await take(sub, 2), [7, 8]);
  await until(() => logs.some((l) => l.includes("2 group(s) in 5..6 lost")), "the gap to be lost");
  assert.equal(metrics.subscriberSkipsTotal.value(), 1, "one skip over the gap");
  assert.equal(metrics.routePromotionsTotal.value(), 1);
  assert.deepEqual(b.fetched, [5, 5, 5, 5, 5], "the gap's first group was asked for five times");
  sub.close();
});

Deno.test("a group whose FETCH failed through a dying route is fetched through the next one", async () => {
  // Real timers: the gap is fetched 500 ms after it opened, the failed group again 1 s later or
  // as soon as a new route delivers.
  const { core, metrics, logs } = setup(5000);
  const a = new FakeSource(1, "192.0.2.1:1");
  const b = new FakeSource(1, "192.0.2.2:2");
  const annA = core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  for (const i of [1, 2, 3, 4, 6]) a.last.push(group(i));
  assert.deepEqual(await take(sub, 5), [1, 2, 3, 4, 6]);
  // Group 5 was lost on the link; its FETCH goes through a session that is dying.
  await until(() => a.fetched.includes(5), "the gap's FETCH through the first route");
  a.dead = true;
  a.last.end(new Error("connection lost"));
  annA.end();
  // The publisher comes back by another route, whose ledger has group 5.
  b.held.set(5, group(5));
  core.routes.announce("b", b);
  await until(() => b.upstreams.length === 1, "the move to the new route");
  assert.equal(b.upstreams[0]?.start, 5, "the new route is asked from the group still missing");
  b.last.push(group(7));
  assert.deepEqual((await take(sub, 2)).sort(), [5, 7]);
  assert.ok(b.fetched.includes(5), "the failed group was fetched again through the new route");
  assert.equal(metrics.subscriberSkipsTotal.value(), 0, logs.join("\n"));
  assert.ok(!logs.some((l) => l.includes("group(s) in")), logs.join("\n"));
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

Deno.test("a group lost on a route change is fetched through the new route, not skipped", async () => {
  const { core, metrics } = setup();
  const a = new FakeSource(1, "192.0.2.1:1");
  const b = new FakeSource(1, "192.0.2.2:2");
  const annA = core.routes.announce("b", a);
  core.routes.announce("b", b);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  // 3 is still on its way when the route's session dies.
  for (const s of [1, 2, 4]) a.last.push(group(s));
  assert.deepEqual(await take(sub, 3), [1, 2, 4]);
  a.dead = true;
  a.last.end(new Error("connection lost"));
  annA.end();
  await settle();
  assert.equal(b.upstreams[0]?.start, 3, "the new route is asked from the lowest group missing");
  // The new route's relay no longer holds 3 in its ring; its ledger does (FETCH).
  b.held.set(3, group(3));
  b.last.push(group(5));
  assert.deepEqual((await take(sub, 2)).sort(), [3, 5]);
  assert.deepEqual(b.fetched, [3]);
  assert.equal(metrics.groupRepairsTotal.value(), 1);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0, "nothing was lost");
  sub.close();
});

Deno.test("a gap on a working route is fetched once it stayed open past the wait", async () => {
  const { core, metrics } = setup();
  const a = new FakeSource(0);
  core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  a.held.set(3, group(3));
  a.held.set(6, group(6));
  for (const s of [1, 2, 4]) a.last.push(group(s));
  assert.deepEqual(await take(sub, 3), [1, 2, 4]);
  // 5 is late but lands within the wait: only 3 and 6 need fetching.
  a.last.push(group(7));
  a.last.push(group(5));
  assert.deepEqual(await take(sub, 2), [7, 5]);
  assert.deepEqual(a.fetched, [], "nothing is fetched before the wait for late groups is over");
  assert.deepEqual((await take(sub, 2)).sort(), [3, 6]);
  assert.deepEqual(a.fetched, [3, 6]);
  assert.equal(metrics.groupRepairsTotal.value(), 2);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  sub.close();
});

Deno.test("the old upstream keeps feeding until the new route answered its SUBSCRIBE", async () => {
  const { core, metrics } = setup();
  const far = new FakeSource(2, "192.0.2.1:1");
  const near = new FakeSource(1, "192.0.2.2:2");
  near.autoAnswer = false;
  core.routes.announce("b", far);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  far.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  core.routes.announce("b", near);
  await settle();
  assert.equal(near.upstreams.length, 1);
  assert.equal(far.upstreams[0]?.closed, false, "kept while the new route is silent");
  far.last.push(group(2));
  assert.deepEqual(await take(sub, 1), [2]);
  near.upstreams[0]!.answer();
  await settle();
  assert.equal(far.upstreams[0]?.closed, true, "released once the new route answered");
  near.last.push(group(3));
  assert.deepEqual(await take(sub, 1), [3]);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  sub.close();
});

Deno.test("a route that never answers does not hold a later switch, and fails its own request", async () => {
  const { core } = setup();
  const far = new FakeSource(2, "192.0.2.1:1");
  const stuck = new FakeSource(1, "192.0.2.2:2");
  const near = new FakeSource(0, "192.0.2.3:3");
  stuck.stall = true;
  core.routes.announce("b", far);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  far.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  core.routes.announce("b", stuck); // the switch there hangs
  await settle();
  core.routes.announce("b", near); // and this one goes ahead anyway
  await settle();
  assert.equal(near.upstreams[0]?.start, 2);
  near.last.push(group(2));
  assert.deepEqual(await take(sub, 1), [2]);
  sub.close();
  // A new track whose only route never answers: the subscriber's request fails in time.
  const lone = new FakeSource(0, "192.0.2.4:4");
  lone.stall = true;
  core.routes.announce("quiet", lone);
  await assert.rejects(core.source("quiet", "t"), /no answer within/);
});

Deno.test("groups the upstream queue dropped are counted as overflows and fetched back", async () => {
  const { core, metrics } = setup();
  const a = new FakeSource(0);
  core.routes.announce("b", a);
  const sub = (await core.source("b", "t")).cursor(undefined, 16);
  a.last.push(group(1));
  assert.deepEqual(await take(sub, 1), [1]);
  // The relay fell behind: its upstream queue dropped 2 and 3 before the loop took 4.
  a.held.set(2, group(2));
  a.held.set(3, group(3));
  a.upstreams[0]!.dropped = 2;
  a.last.push(group(4));
  assert.deepEqual(await take(sub, 1), [4]);
  assert.equal(metrics.upstreamQueueOverflowsTotal.value(), 2);
  assert.deepEqual((await take(sub, 2)).sort(), [2, 3]);
  assert.equal(metrics.groupRepairsTotal.value(), 2);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  sub.close();
});

Deno.test("at shipped settings a dying route's alternate takes over and the group lost in the switch is fetched", async () => {
  const metrics = createRelayMetrics();
  const logs: string[] = [];
  // What startRelay passes at the defaults; idle and repair timers are left to their own.
  const core = new RelayCore({
    metrics,
    cacheSize: RELAY_DEFAULTS.GROUP_CACHE_SIZE,
    cacheMs: RELAY_DEFAULTS.RELAY_CACHE_MS,
    cacheBytes: RELAY_DEFAULTS.RELAY_CACHE_BYTES,
    now: Date.now,
    orphanMs: RELAY_DEFAULTS.RELAY_PUBLISHER_GRACE_MS,
    log: (l) => logs.push(l),
  });
  const a = new FakeSource(1, "192.0.2.1:1");
  const b = new FakeSource(1, "192.0.2.2:2");
  const annA = core.routes.announce("b", a);
  core.routes.announce("b", b);
  // A subscriber's queue is the ring's size, as the relay's sessions set it.
  const sub = (await core.source("b", "t")).cursor(undefined, RELAY_DEFAULTS.GROUP_CACHE_SIZE);
  for (const s of [1, 2, 4]) a.last.push(group(s));
  assert.deepEqual(await take(sub, 3), [1, 2, 4]);
  a.dead = true;
  a.last.end(new Error("connection lost"));
  annA.end();
  await until(() => b.upstreams.length === 1, "the move to the alternate");
  assert.equal(b.upstreams[0]?.start, 3, "the alternate is asked from the lowest group missing");
  b.held.set(3, group(3));
  b.last.push(group(5));
  assert.deepEqual((await take(sub, 2)).sort(), [3, 5]);
  assert.equal(metrics.groupRepairsTotal.value(), 1);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0, logs.join("\n"));
  sub.close();
  // The upstream would be kept 5 s for a next subscriber; end it rather than wait.
  for (const d of core.distributors()) d.close();
});
