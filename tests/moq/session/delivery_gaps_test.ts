import assert from "node:assert/strict";
import { DeliveryGaps } from "../../../src/moq/session/delivery_gaps.ts";

Deno.test("DeliveryGaps: a jump opens a gap that a late group fills without any drop", () => {
  let now = 1000;
  const gaps = new DeliveryGaps(500, () => now);
  gaps.sent(1);
  gaps.sent(4); // 2 and 3 are missing
  assert.equal(gaps.open, 1);
  assert.equal(gaps.nextDeadline(), 1500);
  assert.equal(gaps.settledThrough(1), true);
  assert.equal(gaps.settledThrough(2), false);
  gaps.sent(3);
  gaps.sent(2);
  assert.equal(gaps.open, 0);
  now = 5000;
  assert.deepEqual(gaps.expired(), []);
  assert.equal(gaps.highest, 4);
});

Deno.test("DeliveryGaps: a gap missing past the wait becomes a drop; a fill splits a range", () => {
  let now = 0;
  const gaps = new DeliveryGaps(100, () => now);
  gaps.sent(0);
  gaps.sent(10); // 1..9 missing since 0
  now = 50;
  gaps.sent(5); // late: 1..4 and 6..9 remain, still noticed at 0
  gaps.sent(20); // 11..19 missing since 50
  assert.deepEqual(gaps.expired(), []);
  now = 100;
  assert.deepEqual(gaps.expired(), [[1, 4], [6, 9]]);
  assert.equal(gaps.nextDeadline(), 150);
  assert.deepEqual(gaps.expired(true), [[11, 19]]);
});

Deno.test("DeliveryGaps: expecting an end counts what has not come yet as missing", () => {
  const gaps = new DeliveryGaps(100, () => 0);
  gaps.expect(5, 3); // nothing sent yet; the range 3..5 is wanted
  assert.equal(gaps.highest, 5);
  assert.equal(gaps.settledThrough(5), false);
  gaps.sent(4);
  gaps.sent(3);
  gaps.sent(5);
  assert.equal(gaps.settledThrough(5), true);
  const none = new DeliveryGaps(100, () => 0);
  none.expect(5); // nothing sent, no start: nothing is owed
  assert.equal(none.settledThrough(5), true);
});

Deno.test("DeliveryGaps keeps at most 64 open gaps: the oldest is dropped at once", () => {
  const gaps = new DeliveryGaps(1_000_000, () => 0);
  for (let s = 0; s <= 130; s += 2) gaps.sent(s);
  assert.equal(gaps.open, 65);
  assert.deepEqual(gaps.expired()[0], [1, 1]);
});
