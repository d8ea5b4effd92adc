import assert from "node:assert/strict";
import { Backoff } from "../../src/timers/mod.ts";

Deno.test("backoff doubles from its base up to its cap, spread by its jitter, and resets", () => {
  let r = 0.5;
  const backoff = new Backoff({ baseMs: 250, capMs: 2_000, jitter: 0.2, random: () => r });
  assert.deepEqual([1, 2, 3, 4, 5].map(() => backoff.next()), [250, 500, 1000, 2000, 2000]);
  r = 0;
  assert.equal(backoff.next(), 1600); // 2000 − 20%
  assert.equal(backoff.failures, 6);
  backoff.reset();
  r = 0.999999;
  assert.equal(backoff.next(), 300); // 250 + 20%
});

Deno.test("a backoff that cannot work is refused", () => {
  assert.throws(() => new Backoff({ baseMs: 0, capMs: 10, jitter: 0 }), RangeError);
  assert.throws(() => new Backoff({ baseMs: 10, capMs: 5, jitter: 0 }), RangeError);
  assert.throws(() => new Backoff({ baseMs: 10, capMs: 20, jitter: 1 }), RangeError);
});

Deno.test("full jitter draws each wait from zero up to the doubled, capped wait", () => {
  let r = 0.5;
  const backoff = new Backoff({ baseMs: 1_000, capMs: 4_000, jitter: "full", random: () => r });
  assert.deepEqual([1, 2, 3, 4].map(() => backoff.next()), [500, 1000, 2000, 2000]);
  r = 0;
  assert.equal(backoff.next(), 0);
  r = 0.999999;
  assert.equal(backoff.next(), 4000);
});
