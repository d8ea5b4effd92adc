import assert from "node:assert/strict";
import { withDeadline } from "../../src/timers/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";

const late = () => new Error("too late");

Deno.test("withDeadline settles like the promise when it settles in time, and clears its timer", async () => {
  const clock = new ManualClock();
  assert.equal(await withDeadline(Promise.resolve(7), 100, late, () => {}, clock), 7);
  await assert.rejects(
    withDeadline(Promise.reject(new Error("refused")), 100, late, () => {}, clock),
    /refused/,
  );
  assert.deepEqual(clock.pending, []);
});

Deno.test("withDeadline rejects at the deadline and hands a later answer to `late`", async () => {
  const clock = new ManualClock();
  let answer!: (v: string) => void;
  const handed: string[] = [];
  const waiting = withDeadline(
    new Promise<string>((r) => (answer = r)),
    100,
    late,
    (v) => handed.push(v),
    clock,
  );
  clock.advance(99);
  await Promise.resolve();
  clock.advance(1);
  await assert.rejects(waiting, /too late/);
  answer("session");
  await Promise.resolve();
  assert.deepEqual(handed, ["session"], "the late answer is closed, not leaked");
});
