import assert from "node:assert/strict";
import { Deadlines } from "../../src/timers/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";

function deadlinesOn(clock: ManualClock): Deadlines {
  return new Deadlines({ timers: clock, now: clock.now });
}

Deno.test("Deadlines fires each missed deadline once, in time order, on one timer", () => {
  const clock = new ManualClock();
  const deadlines = deadlinesOn(clock);
  const fired: string[] = [];
  deadlines.add(300, () => fired.push("c"));
  deadlines.add(100, () => fired.push("a"));
  deadlines.add(200, () => fired.push("b"));
  // Only the earliest deadline has a timer.
  assert.deepEqual(clock.pending, [100]);
  clock.advance(99);
  assert.deepEqual(fired, []);
  clock.advance(1);
  assert.deepEqual(fired, ["a"]);
  assert.deepEqual(clock.pending, [100]);
  clock.advance(200);
  assert.deepEqual(fired, ["a", "b", "c"]);
  assert.equal(deadlines.size, 0);
  assert.deepEqual(clock.pending, []);
});

Deno.test("Deadlines never fires a cancelled deadline, and stops once none is left", () => {
  const clock = new ManualClock();
  const deadlines = deadlinesOn(clock);
  const fired: string[] = [];
  const cancelA = deadlines.add(100, () => fired.push("a"));
  deadlines.add(150, () => fired.push("b"));
  const cancelC = deadlines.add(400, () => fired.push("c"));
  cancelA();
  cancelC();
  cancelC(); // twice is harmless
  assert.equal(deadlines.size, 1);
  clock.advance(1000);
  assert.deepEqual(fired, ["b"]);
  assert.deepEqual(clock.pending, []);
});

Deno.test("Deadlines re-arms earlier for a deadline sooner than the armed one", () => {
  const clock = new ManualClock();
  const deadlines = deadlinesOn(clock);
  const fired: string[] = [];
  deadlines.add(5000, () => fired.push("late"));
  deadlines.add(10, () => fired.push("soon"));
  assert.deepEqual(clock.pending, [10]);
  clock.advance(10);
  assert.deepEqual(fired, ["soon"]);
  assert.deepEqual(clock.pending, [4990]);
  // A deadline added from inside a sweep is armed too.
  deadlines.add(1, () => deadlines.add(1, () => fired.push("chained")));
  clock.advance(2);
  assert.deepEqual(fired, ["soon", "chained"]);
});
