/**
 * Exponential backoff with jitter: the wait before the next attempt is
 * `min(base × 2^n, cap)`, spread by ± `jitter` (or drawn from 0 up to it), where n counts the failures
 * since the last reset. The client's reconnects and retries and the relay's
 * peer dials use it with their own figures.
 *
 * @module
 */

/** Options of {@linkcode Backoff}. */
export interface BackoffOptions {
  /** First wait after a failure, ms. */
  readonly baseMs: number;
  /** Longest wait before jitter, ms. */
  readonly capMs: number;
  /**
   * Spread of each wait, as a fraction either way (0 ≤ jitter < 1), or
   * "full": uniform between 0 and the wait, so that many clients that failed
   * together do not retry together.
   */
  readonly jitter: number | "full";
  /** Uniform random numbers in [0, 1) (default Math.random; tests inject their own). */
  readonly random?: () => number;
}

/** Waits that double from `baseMs` up to `capMs`, each spread by ± `jitter`; reset by a success. */
export class Backoff {
  readonly #base: number;
  readonly #cap: number;
  readonly #jitter: number | "full";
  readonly #random: () => number;
  #failures = 0;

  /** A schedule with no failures yet; a schedule that cannot work is a RangeError. */
  constructor(options: BackoffOptions) {
    this.#base = options.baseMs;
    this.#cap = options.capMs;
    this.#jitter = options.jitter;
    this.#random = options.random ?? Math.random;
    if (!(this.#base > 0) || !(this.#cap >= this.#base)) {
      throw new RangeError(`Cannot back off from ${this.#base} ms up to ${this.#cap} ms`);
    }
    if (this.#jitter !== "full" && !(this.#jitter >= 0 && this.#jitter < 1)) {
      throw new RangeError(`Cannot use jitter "${this.#jitter}": outside 0..1`);
    }
  }

  /** Consecutive failures since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** The wait before the next attempt, ms; each call counts one more failure. */
  next(): number {
    const exponent = Math.min(this.#failures, 30);
    this.#failures++;
    const wait = Math.min(this.#base * 2 ** exponent, this.#cap);
    if (this.#jitter === "full") return Math.round(wait * this.#random());
    return Math.round(wait * (1 - this.#jitter + 2 * this.#jitter * this.#random()));
  }

  /** An attempt succeeded: the next failure waits `baseMs` again. */
  reset(): void {
    this.#failures = 0;
  }
}
