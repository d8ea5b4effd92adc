// The peer dial schedule with injected random numbers.
import assert from "node:assert/strict";
import { DialBackoff } from "../../../src/relay/mesh/dial_backoff.ts";

Deno.test("failed dials wait 1 s doubling up to 30 s, spread by ±25%", () => {
  const middle = new DialBackoff({ random: () => 0.5 });
  const waits = Array.from({ length: 8 }, () => middle.failed());
  assert.deepEqual(waits, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  const low = new DialBackoff({ random: () => 0 });
  assert.deepEqual([low.failed(), low.failed()], [750, 1500]);
  const high = new DialBackoff({ random: () => 0.999999 });
  assert.deepEqual([high.failed(), high.failed()], [1250, 2500]);
  for (let i = 0; i < 10; i++) high.failed();
  assert.equal(high.failed(), 37500, "the cap is 30 s before jitter");
});

Deno.test("a successful dial resets the schedule", () => {
  const b = new DialBackoff({ random: () => 0.5 });
  b.failed();
  b.failed();
  assert.equal(b.failures, 2);
  b.succeeded();
  assert.equal(b.failures, 0);
  assert.equal(b.failed(), 1000);
});

Deno.test("after a session ends the first redial is immediate (0-100 ms), then backoff starts at 1 s", () => {
  let r = 0.999;
  const b = new DialBackoff({ random: () => r });
  for (let i = 0; i < 6; i++) b.failed();
  b.succeeded();
  assert.equal(b.ended(), 100);
  r = 0;
  assert.equal(b.ended(), 0);
  r = 0.5;
  assert.equal(b.failed(), 1000, "the immediate redial failed: back to the base wait");
});

Deno.test("a schedule that cannot work is refused", () => {
  assert.throws(() => new DialBackoff({ baseMs: 0 }), RangeError);
  assert.throws(() => new DialBackoff({ baseMs: 10, capMs: 5 }), RangeError);
  assert.throws(() => new DialBackoff({ jitter: 1 }), RangeError);
});
