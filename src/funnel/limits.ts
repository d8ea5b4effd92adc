import type { RateLimit } from "../config/mod.ts";

/** Outcome of {@link RateLimiter.take}. */
export type TakeResult = { readonly ok: true } | {
  readonly ok: false;
  /** Whole seconds until a record would be accepted, at least 1 (for Retry-After). */
  readonly retryAfterSeconds: number;
};

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Most keys a {@linkcode RateLimiter} holds a partly used bucket for: past
 * it, the bucket used longest ago is forgotten (it starts full again).
 */
export const MAX_RATE_BUCKETS = 65_536;

/**
 * Token buckets keyed by a string (a sender within a track, or a track).
 * The clock is injected (milliseconds), so tests are exact. Buckets that
 * have refilled completely are forgotten, so memory follows active keys,
 * and at most `maxKeys` are held however many keys a client makes up.
 */
export class RateLimiter {
  readonly #limit: RateLimit;
  readonly #now: () => number;
  // In the order of their last take (granted or refused): the first is used longest ago.
  readonly #buckets = new Map<string, Bucket>();
  readonly #maxKeys: number;
  #nextSweep = 0;

  /** Creates a limiter for one limit, holding at most `maxKeys` buckets. */
  constructor(limit: RateLimit, now: () => number = Date.now, maxKeys = MAX_RATE_BUCKETS) {
    if (!(limit.rate > 0) || !(limit.burst >= 1)) {
      throw new RangeError(
        `Rate limit needs rate > 0 and burst >= 1, got ${limit.rate},${limit.burst}`,
      );
    }
    this.#limit = limit;
    this.#now = now;
    this.#maxKeys = Math.max(1, maxKeys);
  }

  /** True when `key` could take a token now, without taking it. */
  peek(key: string): TakeResult {
    return this.#check(key, false);
  }

  /** Takes one token for `key` if one is available. */
  take(key: string): TakeResult {
    return this.#check(key, true);
  }

  /** Number of keys holding a partly used bucket (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  #check(key: string, consume: boolean): TakeResult {
    const now = this.#now();
    this.#sweep(now);
    const { rate, burst } = this.#limit;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    const tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    if (tokens >= 1) {
      if (consume) this.#took(key, { tokens: tokens - 1, at: now });
      return { ok: true };
    }
    // Refused, it is still in use: it moves to the end, away from being forgotten.
    if (consume) this.#took(key, bucket);
    const waitMs = ((1 - tokens) / rate) * 1000;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  #took(key: string, bucket: Bucket): void {
    const buckets = this.#buckets;
    buckets.delete(key);
    buckets.set(key, bucket);
    // A forgotten bucket starts full again: the one used longest ago is likely the fullest.
    if (buckets.size > this.#maxKeys) buckets.delete(buckets.keys().next().value!);
  }

  // Forget buckets that are full again: they behave exactly like new ones.
  #sweep(now: number): void {
    if (now < this.#nextSweep) return;
    const fullAfterMs = (this.#limit.burst / this.#limit.rate) * 1000;
    this.#nextSweep = now + Math.max(1000, fullAfterMs);
    for (const [key, bucket] of this.#buckets) {
      if (now - bucket.at >= fullAfterMs) this.#buckets.delete(key);
    }
  }
}
