// Route election: the order of the rules, the exact margins, and the reasons.
import assert from "node:assert/strict";
import { compareRoutes, type RouteStats } from "../../../src/relay/routing/route_election.ts";

const live = (over: Partial<RouteStats> = {}): RouteStats => ({ alive: true, hops: 1, ...over });

function decide(candidate: Partial<RouteStats>, incumbent: Partial<RouteStats>): string {
  const d = compareRoutes(live(candidate), live(incumbent));
  return `${d.accepted ? "wins" : "loses"}:${d.reason}`;
}

Deno.test("liveness decides first: a live candidate beats a dead incumbent, a dead one never wins", () => {
  assert.equal(decide({ hops: 5 }, { alive: false, hops: 0 }), "wins:alive");
  assert.equal(decide({ alive: false, hops: 0 }, { hops: 5 }), "loses:dead_candidate");
  assert.equal(decide({ alive: false }, { alive: false }), "loses:dead_candidate");
});

Deno.test("fewer hops wins outright and more hops loses, whatever the measurements say", () => {
  assert.equal(decide({ hops: 1, rttMs: 500 }, { hops: 2, rttMs: 1 }), "wins:hops");
  assert.equal(
    decide({ hops: 3, rttMs: 1, bitrateBps: 1e9 }, { hops: 2, rttMs: 500, bitrateBps: 1 }),
    "loses:inferior_hops",
  );
});

Deno.test("bitrate decides equal hops only at 1.2x the incumbent's or more", () => {
  assert.equal(decide({ bitrateBps: 1200 }, { bitrateBps: 1000 }), "wins:bitrate");
  assert.equal(
    decide({ bitrateBps: 1199, rttMs: 1 }, { bitrateBps: 1000, rttMs: 100 }),
    "loses:insufficient_bitrate_margin",
    "a better but not better enough bitrate does not fall through to RTT",
  );
  assert.equal(
    decide({ bitrateBps: 900, rttMs: 1 }, { bitrateBps: 1000 }),
    "loses:inferior_bitrate",
  );
});

Deno.test("an unknown bitrate on either side is not compared; RTT decides then", () => {
  assert.equal(decide({ rttMs: 10 }, { bitrateBps: 1000, rttMs: 20 }), "wins:rtt");
  assert.equal(decide({ bitrateBps: 5000, rttMs: 20 }, { rttMs: 20 }), "loses:equal_or_unknown");
  assert.equal(
    decide({ bitrateBps: 1000, rttMs: 10 }, { bitrateBps: 1000, rttMs: 20 }),
    "wins:rtt",
  );
});

Deno.test("RTT wins at least 5 ms lower or at most 0.8x; a smaller gain is not enough", () => {
  // 5 ms lower, though only 0.9x.
  assert.equal(decide({ rttMs: 45 }, { rttMs: 50 }), "wins:rtt");
  assert.equal(decide({ rttMs: 45.5 }, { rttMs: 50 }), "loses:insufficient_rtt_margin");
  // 0.8x, though only 2 ms lower.
  assert.equal(decide({ rttMs: 8 }, { rttMs: 10 }), "wins:rtt");
  assert.equal(decide({ rttMs: 8.5 }, { rttMs: 10 }), "loses:insufficient_rtt_margin");
  assert.equal(decide({ rttMs: 30 }, { rttMs: 20 }), "loses:inferior_rtt");
  assert.equal(decide({ rttMs: 20 }, { rttMs: 20 }), "loses:equal_or_unknown");
});

Deno.test("an unknown RTT never displaces a known route, nor is a known one preferred over it", () => {
  assert.equal(decide({}, { rttMs: 50 }), "loses:equal_or_unknown");
  assert.equal(decide({ rttMs: 1 }, {}), "loses:equal_or_unknown");
  assert.equal(decide({ rttMs: 0 }, { rttMs: 50 }), "loses:equal_or_unknown");
});
