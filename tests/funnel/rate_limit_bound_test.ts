// The rate limiter's buckets are bounded however many keys (senders, tracks)
// a client makes up, and the bound does not let a busy key off its limit.
import assert from "node:assert/strict";
import { MAX_RATE_BUCKETS, RateLimiter } from "../../src/funnel/limits.ts";

Deno.test("rate limiter: a flood of new keys holds at most MAX_RATE_BUCKETS buckets, and a busy key stays limited", () => {
  const now = 0; // one instant: no bucket refills, so only the bound forgets any
  const limiter = new RateLimiter({ rate: 1, burst: 2 }, () => now);
  assert.equal(limiter.take("busy").ok, true);
  assert.equal(limiter.take("busy").ok, true);
  assert.equal(limiter.take("busy").ok, false);
  for (let i = 0; i < MAX_RATE_BUCKETS + 10_000; i++) {
    assert.equal(limiter.take(`made-up-${i}`).ok, true);
    // The busy key keeps asking: its bucket is the most recently used, never the one forgotten.
    if (i % 1000 === 0) assert.equal(limiter.take("busy").ok, false);
  }
  assert.equal(limiter.size, MAX_RATE_BUCKETS);
  assert.equal(limiter.take("busy").ok, false);
  // A forgotten key starts full, as a new one would.
  assert.equal(limiter.take("made-up-0").ok, true);
});

Deno.test("rate limiter: buckets full again are forgotten as time passes", () => {
  let now = 0;
  const limiter = new RateLimiter({ rate: 10, burst: 10 }, () => now);
  for (let i = 0; i < 100; i++) limiter.take(`k${i}`);
  assert.equal(limiter.size, 100);
  now = 500;
  limiter.take("late");
  now = 1_200; // the first 100 are full again; "late" is not
  limiter.take("later");
  assert.equal(limiter.size, 2);
});
