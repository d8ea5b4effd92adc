// Hop ids and the loop rules of announcements.
import assert from "node:assert/strict";
import { loopsThrough, offerable, randomHopId } from "../../src/moq/hops.ts";

Deno.test("hop ids are random, non-zero and below 2^53 (JS peers read them as numbers)", () => {
  const ids = new Set<bigint>();
  for (let i = 0; i < 1000; i++) {
    const id = randomHopId();
    assert.ok(id > 0n && id < 2n ** 53n, String(id));
    ids.add(id);
  }
  assert.ok(ids.size > 990);
});

Deno.test("an announcement is never offered to the peer it came through, nor to ourselves", () => {
  const own = 7n;
  assert.equal(offerable([1n, 2n], 0n, own), true, "0 excludes nothing");
  assert.equal(offerable([1n, 2n], 3n, own), true);
  assert.equal(offerable([1n, 2n], 2n, own), false, "the list holds the requester");
  assert.equal(offerable([], own, own), false, "the requester is this endpoint");
});

Deno.test("a received announcement whose list holds our id went round a loop", () => {
  assert.equal(loopsThrough([1n, 7n, 3n], 7n), true);
  assert.equal(loopsThrough([1n, 3n], 7n), false);
  assert.equal(loopsThrough([0n], 0n), false, "0 is no identity");
});
