// The route table: election on arrival, the one retained alternate, promotion,
// hop-list updates, and the metrics each of them moves.
import assert from "node:assert/strict";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { type RouteChange, RouteTable } from "../../../src/relay/routing/route_table.ts";
import { FakeSource } from "./_fake_source.ts";

function table(): { routes: RouteTable; metrics: ReturnType<typeof createRelayMetrics> } {
  const metrics = createRelayMetrics();
  let t = 1_000_000;
  return { routes: new RouteTable(metrics, () => (t += 10)), metrics };
}

function source(hops: number, rtt?: number, remote?: string): FakeSource {
  const s = new FakeSource(hops, remote);
  s.rtt = rtt;
  return s;
}

Deno.test("the shorter path wins; a longer one is rejected and kept as the alternate", () => {
  const { routes, metrics } = table();
  const far = source(2, 10);
  const near = source(1, 40);
  const aFar = routes.announce("p", far);
  const aNear = routes.announce("p", near);
  assert.equal(routes.get("p")?.source, near);
  assert.equal(aNear.active, true);
  assert.equal(aFar.retained, true);
  assert.equal(metrics.routeReplacementsTotal.value(), 1);
  const longer = routes.announce("p", source(3, 1));
  assert.equal(longer.active, false);
  assert.equal(longer.retained, false, "a worse loser does not displace the alternate");
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "inferior_hops" }), 1);
  assert.equal(metrics.routesRetained.value(), 1);
});

Deno.test("a later loser takes the alternate's place only if it would win against it", () => {
  const { routes, metrics } = table();
  routes.announce("p", source(1, 10));
  const slow = routes.announce("p", source(1, 50));
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "inferior_rtt" }), 1);
  assert.equal(slow.retained, true);
  const close = routes.announce("p", source(1, 48));
  assert.equal(close.retained, false, "2 ms better than the alternate is inside the margin");
  const better = routes.announce("p", source(1, 30));
  assert.equal(better.retained, true);
  assert.equal(slow.retained, false);
  assert.equal(metrics.routesRetained.value(), 1, "one alternate per path");
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "inferior_rtt" }), 3);
});

Deno.test("when the selected route ends the alternate is promoted; with none the path ends", () => {
  const { routes, metrics } = table();
  const changes: RouteChange["kind"][] = [];
  routes.onChange((c) => changes.push(c.kind));
  const first = source(1, 10, "192.0.2.1:1");
  const second = source(1, 10, "192.0.2.2:2");
  const a1 = routes.announce("p", first);
  const a2 = routes.announce("p", second);
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "equal_or_unknown" }), 1);
  const before = routes.get("p")!;
  a1.end();
  const after = routes.get("p")!;
  assert.equal(after.source, second);
  assert.ok(after.lastUpdated > before.lastUpdated, "last_updated moves with the route");
  assert.equal(metrics.routePromotionsTotal.value(), 1);
  assert.equal(metrics.routesRetained.value(), 0);
  a2.end();
  assert.equal(routes.get("p"), undefined);
  assert.equal(metrics.broadcastsActive.value(), 0);
  assert.deepEqual(changes, ["installed", "promoted", "ended"]);
});

Deno.test("a dead alternate is not promoted and a dead candidate is not retained", () => {
  const { routes, metrics } = table();
  const a1 = routes.announce("p", source(1));
  const dying = source(1);
  routes.announce("p", dying);
  dying.dead = true;
  a1.end();
  assert.equal(routes.get("p"), undefined, "the alternate's session is gone");
  assert.equal(metrics.routePromotionsTotal.value(), 0);
  routes.announce("p", source(1));
  const dead = source(0);
  dead.dead = true;
  const d = routes.announce("p", dead);
  assert.equal(d.retained, false);
  assert.equal(metrics.routeRejectionsTotal.value({ reason: "dead_candidate" }), 1);
});

Deno.test("a live candidate replaces a selected route whose session is gone", () => {
  const { routes, metrics } = table();
  const gone = source(0);
  routes.announce("p", gone);
  gone.dead = true;
  const next = routes.announce("p", source(3));
  assert.equal(next.active, true);
  assert.equal(metrics.routeReplacementsTotal.value(), 1);
  assert.equal(metrics.routesRetained.value(), 0, "the dead loser is not kept");
});

Deno.test("a new hop list for the selected route is an update, not an election", () => {
  const { routes, metrics } = table();
  const changes: RouteChange[] = [];
  routes.onChange((c) => changes.push(c));
  const a = routes.announce("p", source(1));
  a.update(3, [1n, 2n, 3n, 4n]);
  assert.equal(routes.get("p")?.hops, 3);
  assert.deepEqual(routes.get("p")?.hopIds, [1n, 2n, 3n, 4n]);
  assert.deepEqual(changes.map((c) => c.kind), ["installed", "updated"]);
  assert.equal(metrics.routeReplacementsTotal.value(), 0);
});

Deno.test("bitrate counts what a route delivered, so it only decides between routes that carried data", () => {
  const { routes, metrics } = table();
  const a = source(1, 20, "192.0.2.1:1");
  routes.announce("p", a);
  routes.meter("p", a)!.add(10_000);
  assert.ok(routes.get("p")!.rate.bitsPerSecond() > 0);
  // The newcomer carried nothing yet: its bitrate is unknown and RTT decides.
  const b = source(1, 10, "192.0.2.2:2");
  routes.announce("p", b);
  assert.equal(routes.get("p")?.source, b);
  assert.equal(metrics.routeReplacementsTotal.value(), 1);
});

Deno.test("a selected route whose session is going away steps down to a live alternate", () => {
  const { routes, metrics } = table();
  const leaving = source(1, 10, "192.0.2.1:1");
  const staying = source(1, 10, "192.0.2.2:2");
  const a = routes.announce("p", leaving);
  routes.announce("p", staying);
  a.stepDown();
  assert.equal(routes.get("p")?.source, staying);
  assert.equal(metrics.routePromotionsTotal.value(), 1);
  // Without an alternate the route stays where it is until its session closes.
  const alone = routes.announce("q", source(1));
  alone.stepDown();
  assert.equal(alone.active, true);
});
