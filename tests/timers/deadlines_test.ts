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

Deno.test("Deadlines: cancelling the last deadline clears the timer at once", () => {
  const clock = new ManualClock();
  const deadlines = deadlinesOn(clock);
  const cancelA = deadlines.add(600_000, () => {});
  const cancelB = deadlines.add(900_000, () => {});
  cancelA();
  assert.deepEqual(clock.pending, [600_000], "one left: the armed timer stays");
  cancelB();
  // Nothing pending, rather than a timer that keeps the process alive for ten minutes.
  assert.deepEqual(clock.pending, []);
  deadlines.add(50, () => {});
  assert.deepEqual(clock.pending, [50], "and it is armed again for the next one");
});

Deno.test("Deadlines as Timers: setTimeout adds a deadline on the shared timer, clearTimeout cancels it", () => {
  const clock = new ManualClock();
  const deadlines = deadlinesOn(clock);
  const fired: string[] = [];
  const t = deadlines.timers;
  const a = t.setTimeout(() => fired.push("a"), 100);
  t.setTimeout(() => fired.push("b"), 200);
  assert.deepEqual(clock.pending, [100], "one timer for both");
  t.clearTimeout(a);
  t.clearTimeout(undefined);
  clock.advance(200);
  assert.deepEqual(fired, ["b"]);
  assert.deepEqual(clock.pending, []);
});

Deno.test("Deadlines missed together, the timer firing late, fire in time order, ties first-added first", () => {
  // A timer that fires only when told, at whatever time the test has reached: a busy event loop.
  let now = 0;
  let armed: (() => void) | undefined;
  const deadlines = new Deadlines({
    timers: {
      setTimeout: (fn) => (armed = fn),
      clearTimeout: () => (armed = undefined),
    },
    now: () => now,
  });
  const fired: string[] = [];
  deadlines.add(300, () => fired.push("c"));
  deadlines.add(200, () => fired.push("b1"));
  deadlines.add(100, () => fired.push("a"));
  deadlines.add(200, () => fired.push("b2"));
  const cancelD = deadlines.add(150, () => fired.push("cancelled"));
  deadlines.add(900, () => fired.push("later"));
  cancelD();
  now = 350;
  armed!();
  assert.deepEqual(fired, ["a", "b1", "b2", "c"]);
  assert.equal(deadlines.size, 1);
});

Deno.test("Deadlines: thousands added and cancelled in any order fire exactly the ones kept, in time order", () => {
  const clock = new ManualClock(0);
  const deadlines = deadlinesOn(clock);
  const fired: number[] = [];
  const cancels = new Map<number, () => void>();
  // Deadlines at 1..5000 ms added in a fixed scramble; a third of them cancelled in another.
  for (let i = 0; i < 5000; i++) {
    const at = 1 + ((i * 7919) % 5000);
    cancels.set(at, deadlines.add(at, () => fired.push(at)));
  }
  const cancelled = new Set<number>();
  for (let i = 0; i < 5000; i += 3) cancelled.add(1 + ((i * 31) % 5000));
  for (const at of cancelled) cancels.get(at)!();
  assert.equal(deadlines.size, 5000 - cancelled.size);
  clock.advance(5000);
  const kept = Array.from({ length: 5000 }, (_, i) => i + 1).filter((at) => !cancelled.has(at));
  assert.deepEqual(fired, kept);
  assert.equal(deadlines.size, 0);
  assert.deepEqual(clock.pending, []);
});
