import assert from "node:assert/strict";
import { Backoff, retryUntilDone } from "../../src/timers/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";

const backoff = (): Backoff => new Backoff({ baseMs: 100, capMs: 400, jitter: 0 });

// Lets the retry loop run up to its next wait.
const turn = () => new Promise((r) => setTimeout(r, 0));

Deno.test("retryUntilDone: retries after each failure with backoff until an attempt succeeds", async () => {
  const clock = new ManualClock();
  const errors: unknown[] = [];
  let calls = 0;
  const done = retryUntilDone(() => {
    calls++;
    return calls < 4 ? Promise.reject(new Error(`fail ${calls}`)) : Promise.resolve();
  }, {
    signal: new AbortController().signal,
    backoff: backoff(),
    onError: (e) => errors.push(e),
    timers: clock,
  });
  for (const wait of [100, 200, 400]) {
    await turn();
    assert.deepEqual(clock.pending, [wait]);
    clock.advance(wait);
  }
  assert.equal(await done, true);
  assert.equal(calls, 4);
  assert.equal(errors.length, 3);
});

Deno.test("retryUntilDone: an abort stops the retries", async () => {
  const clock = new ManualClock();
  const stop = new AbortController();
  let calls = 0;
  const done = retryUntilDone(() => {
    calls++;
    return Promise.reject(new Error("fails"));
  }, { signal: stop.signal, backoff: backoff(), timers: clock });
  await turn();
  stop.abort();
  assert.equal(await done, false);
  assert.equal(calls, 1);
});
