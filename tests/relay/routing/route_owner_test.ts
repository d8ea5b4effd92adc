// Route ownership in the route table: a broadcast belongs to the identity
// that announced it first; another identity's announcement waits while the
// owner is connected and for the grace period after it left, in which the
// owner reclaims it; the waiting and the released paths are bounded.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { MAX_WAITING_PER_PATH, RouteTable } from "../../../src/relay/routing/route_table.ts";
import { MAX_RELEASED_OWNERS, RouteOwners } from "../../../src/relay/routing/route_owners.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { FakeSource } from "./_fake_source.ts";

/** RELAY_PUBLISHER_GRACE_MS's default. */
const GRACE = 10_000;

function table() {
  const clock = new ManualClock();
  const metrics = createRelayMetrics();
  const routes = new RouteTable(metrics, clock.now, { graceMs: GRACE, timers: clock });
  return { clock, metrics, routes };
}

/** A publisher connected here (0 hops) with identity `owner`. */
function direct(owner: string, remote = "192.0.2.1:5000"): FakeSource & { owner: string } {
  return Object.assign(new FakeSource(0, remote), { owner });
}

Deno.test("another identity's announcement of an owned broadcast waits, and never becomes the alternate", () => {
  const { routes, metrics } = table();
  const real = direct("sub:funnel");
  routes.announce("room/1", real);
  const forged = routes.announce("room/1", direct("sub:mallory", "198.51.100.7:4000"));
  assert.equal(routes.get("room/1")?.source, real);
  assert.equal(forged.active, false);
  assert.equal(forged.retained, false);
  assert.equal(routes.alternate("room/1"), undefined);
  assert.equal(routes.owner("room/1"), "sub:funnel");
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "not_owner" }), 1);
});

Deno.test("the owner's restart within the grace reclaims its broadcast; the impostor keeps waiting", () => {
  const { routes, clock } = table();
  const first = routes.announce("room/1", direct("sub:funnel"));
  const forged = routes.announce("room/1", direct("sub:mallory", "198.51.100.7:4000"));
  first.end(); // the publisher's session ended: it is restarting
  assert.equal(routes.get("room/1"), undefined, "the impostor is not promoted");
  clock.advance(GRACE - 1);
  const back = direct("sub:funnel", "192.0.2.1:5001");
  routes.announce("room/1", back);
  assert.equal(routes.get("room/1")?.source, back);
  clock.advance(GRACE * 3);
  assert.equal(routes.get("room/1")?.source, back, "the grace of the first session is over");
  assert.equal(forged.active, false);
  assert.equal(routes.waiting, 1);
});

Deno.test("when the owner does not come back within the grace, the waiting announcement takes the broadcast", () => {
  const { routes, clock } = table();
  const first = routes.announce("room/1", direct("address:192.0.2.1"));
  const other = direct("address:198.51.100.7", "198.51.100.7:4000");
  const next = routes.announce("room/1", other);
  first.end();
  clock.advance(GRACE - 1);
  assert.equal(routes.get("room/1"), undefined);
  clock.advance(1);
  assert.equal(routes.get("room/1")?.source, other);
  assert.equal(next.active, true);
  assert.equal(routes.owner("room/1"), "address:198.51.100.7");
  assert.equal(routes.waiting, 0);
});

Deno.test("a peer relay's route is not subject to ownership and still carries the broadcast meanwhile", () => {
  const { routes } = table();
  const first = routes.announce("room/1", direct("sub:funnel"));
  const viaPeer = new FakeSource(1, "203.0.113.1:4433");
  routes.announce("room/1", viaPeer);
  assert.equal(routes.alternate("room/1"), viaPeer);
  first.end();
  assert.equal(routes.get("room/1")?.source, viaPeer, "the publisher moved to a peer relay");
  const back = direct("sub:funnel", "192.0.2.1:5001");
  routes.announce("room/1", back);
  assert.equal(routes.get("room/1")?.source, back, "connected here again: 0 hops wins");
});

Deno.test(`at most ${MAX_WAITING_PER_PATH} announcements of one path wait; the rest are refused`, () => {
  const { routes } = table();
  routes.announce("room/1", direct("sub:funnel"));
  const waiting = [];
  for (let i = 0; i < MAX_WAITING_PER_PATH + 3; i++) {
    waiting.push(routes.announce("room/1", direct(`sub:other-${i}`, `198.51.100.${i}:1`)));
  }
  assert.equal(routes.waiting, MAX_WAITING_PER_PATH);
  // A waiting announcement withdrawn leaves the list.
  waiting[0]!.end();
  assert.equal(routes.waiting, MAX_WAITING_PER_PATH - 1);
});

Deno.test(`at most ${MAX_RELEASED_OWNERS} paths are held in their grace; the longest released is freed first`, () => {
  const clock = new ManualClock();
  const freed: string[] = [];
  const owners = new RouteOwners({ graceMs: GRACE, timers: clock, onFree: (p) => freed.push(p) });
  for (let i = 0; i <= MAX_RELEASED_OWNERS; i++) {
    assert.equal(owners.claim(`p/${i}`, "sub:a"), true);
    owners.release(`p/${i}`, "sub:a");
  }
  assert.equal(owners.size, MAX_RELEASED_OWNERS);
  assert.deepEqual(freed, ["p/0"]);
  assert.equal(owners.owner("p/0"), undefined);
  assert.equal(owners.owner("p/1"), "sub:a");
  clock.advance(GRACE);
  assert.equal(owners.size, 0, "every grace ended");
});
