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
 * Token buckets keyed by a string (a sender within a track, or a track).
 * The clock is injected (milliseconds), so tests are exact. Buckets that
 * have refilled completely are forgotten, so memory follows active keys.
 */
export class RateLimiter {
  readonly #limit: RateLimit;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  #nextSweep = 0;

  /** Creates a limiter for one limit. */
  constructor(limit: RateLimit, now: () => number = Date.now) {
    if (!(limit.rate > 0) || !(limit.burst >= 1)) {
      throw new RangeError(
        `Rate limit needs rate > 0 and burst >= 1, got ${limit.rate},${limit.burst}`,
      );
    }
    this.#limit = limit;
    this.#now = now;
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
      if (consume) this.#buckets.set(key, { tokens: tokens - 1, at: now });
      return { ok: true };
    }
    const waitMs = ((1 - tokens) / rate) * 1000;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
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
