import assert from "node:assert/strict";
import {
  type BudgetHolder,
  MAX_WAITING,
  MIN_PROGRESS,
  ReceiveBudget,
  STALL_MS,
} from "../../../src/moq/track/receive_budget.ts";
import { DecodeError } from "../../../src/wire/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";

// A group being received: `delivered` stands for its stream's bytes so far.
function group(): BudgetHolder & { delivered: number; wasReset: boolean } {
  return {
    held: 0,
    delivered: 0,
    wasReset: false,
    progress() {
      return this.delivered;
    },
    reset() {
      this.wasReset = true;
    },
  };
}

// Settles `p` into "taken" or the error's message, or "waiting" if still pending.
async function state(p: Promise<void> | void): Promise<string> {
  const pending = Symbol();
  try {
    const r = await Promise.race([p, new Promise((r) => setTimeout(() => r(pending), 0))]);
    return r === pending ? "waiting" : "taken";
  } catch (err) {
    return (err as Error).message;
  }
}

Deno.test("ReceiveBudget: what fits is taken at once, the rest waits for a release", async () => {
  const budget = new ReceiveBudget(100, new ManualClock());
  const [a, b] = [group(), group()];
  assert.equal(await state(budget.take(60, a)), "taken");
  const second = budget.take(60, b);
  assert.equal(await state(second), "waiting");
  budget.release(a);
  assert.equal(await state(second), "taken");
  assert.equal(budget.held, 60);
  assert.equal(b.held, 60);
  assert.equal(a.held, 0);
});

Deno.test("ReceiveBudget: a group already holding bytes is let in before a new one", async () => {
  const budget = new ReceiveBudget(100, new ManualClock());
  const [a, b, c] = [group(), group(), group()];
  await budget.take(50, a);
  await budget.take(40, b);
  const fresh = budget.take(31, c);
  const continuing = budget.take(30, b);
  budget.release(a); // room for one of them
  assert.equal(await state(continuing), "taken");
  assert.equal(await state(fresh), "waiting");
  budget.release(b);
  assert.equal(await state(fresh), "taken");
});

Deno.test("ReceiveBudget: a frame larger than the whole budget, or one no release can ever make room for, is refused", async () => {
  const budget = new ReceiveBudget(100, new ManualClock());
  const a = group();
  await assert.rejects(async () => await budget.take(101, a), DecodeError);
  await budget.take(60, a);
  // Its own group holds every byte held: waiting would be for ever.
  await assert.rejects(
    async () => await budget.take(60, a),
    /Cannot buffer more partially received groups/,
  );
});

Deno.test("ReceiveBudget: while groups wait, a group holding bytes that receives nothing for STALL_MS is reset", async () => {
  const clock = new ManualClock();
  const budget = new ReceiveBudget(100, clock);
  const [quiet, busy, waiting] = [group(), group(), group()];
  await budget.take(50, quiet);
  await budget.take(50, busy);
  const wait = budget.take(10, waiting);
  // The first check records; a group is reset only after a whole interval without a byte.
  clock.advance(STALL_MS);
  busy.delivered += MIN_PROGRESS;
  clock.advance(STALL_MS);
  assert.equal(quiet.wasReset, true, "the quiet holder is reset");
  assert.equal(busy.wasReset, false, "a holder whose bytes arrive is not");
  assert.equal(budget.stalledResets, 1);
  // Its stream fails, and its reader releases what it held: the waiting group goes on.
  budget.release(quiet);
  assert.equal(await state(wait), "taken");
  // With nobody waiting any more, the next check arms no other.
  clock.advance(STALL_MS);
  assert.deepEqual(clock.pending, []);
});

Deno.test("ReceiveBudget: while groups wait, a group that trickles (an empty frame now and then) is reset too", () => {
  const clock = new ManualClock();
  const budget = new ReceiveBudget(100, clock);
  const [trickling, waiting] = [group(), group()];
  budget.take(100, trickling);
  budget.take(10, waiting);
  clock.advance(STALL_MS);
  trickling.delivered += 2; // one empty frame: its size and timestamp varints
  clock.advance(STALL_MS);
  assert.equal(trickling.wasReset, true);
});

Deno.test("ReceiveBudget: a quiet group is never reset while nobody waits", () => {
  const clock = new ManualClock();
  const budget = new ReceiveBudget(100, clock);
  const quiet = group();
  budget.take(100, quiet);
  clock.advance(10 * STALL_MS);
  assert.equal(quiet.wasReset, false);
  assert.deepEqual(clock.pending, []);
});

Deno.test("ReceiveBudget: at most MAX_WAITING groups wait; the next is refused", async () => {
  const budget = new ReceiveBudget(100, new ManualClock());
  await budget.take(100, group());
  const waiting = Array.from({ length: MAX_WAITING }, () => budget.take(1, group()));
  assert.equal(budget.waiting, MAX_WAITING);
  await assert.rejects(
    async () => await budget.take(1, group()),
    /Cannot buffer more partially received groups/,
  );
  budget.close(new Error("session closed"));
  await Promise.allSettled(waiting);
});

Deno.test("ReceiveBudget: closing refuses the groups that wait and any later take", async () => {
  const budget = new ReceiveBudget(100, new ManualClock());
  await budget.take(100, group());
  const waiting = budget.take(10, group());
  budget.close(new Error("session closed"));
  assert.equal(await state(waiting), "session closed");
  await assert.rejects(async () => await budget.take(1, group()), /session closed/);
});
