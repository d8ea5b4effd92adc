/**
 * When to dial a peer again. After a failed dial the wait doubles from 1 s
 * up to 30 s, each wait spread by ±25% so that relays restarted together do
 * not redial in step; a successful dial resets it. When an established
 * session ends, the first redial goes out at once (0–100 ms), since a
 * session that was fine a moment ago most likely comes back on the first
 * try; only if that fails does the doubling start.
 *
 * @module
 */

/** Options of {@linkcode DialBackoff}. */
export interface DialBackoffOptions {
  /** First wait after a failure, ms (default 1000). */
  readonly baseMs?: number;
  /** Longest wait before jitter, ms (default 30000). */
  readonly capMs?: number;
  /** Spread of each wait, as a fraction either way (default 0.25). */
  readonly jitter?: number;
  /** Longest delay of the immediate redial after a session ended, ms (default 100). */
  readonly immediateMs?: number;
  /** Uniform random numbers in [0, 1) (default Math.random; tests inject their own). */
  readonly random?: () => number;
}

/** The peer dial schedule: `min(base × 2^n, cap)` ± jitter, reset by a success. */
export class DialBackoff {
  readonly #base: number;
  readonly #cap: number;
  readonly #jitter: number;
  readonly #immediate: number;
  readonly #random: () => number;
  #failures = 0;

  /** Makes a schedule with no failures yet. */
  constructor(options: DialBackoffOptions = {}) {
    this.#base = options.baseMs ?? 1000;
    this.#cap = options.capMs ?? 30_000;
    this.#jitter = options.jitter ?? 0.25;
    this.#immediate = options.immediateMs ?? 100;
    this.#random = options.random ?? Math.random;
    if (!(this.#base > 0) || !(this.#cap >= this.#base)) {
      throw new RangeError(`Cannot back off from ${this.#base} ms up to ${this.#cap} ms`);
    }
    if (!(this.#jitter >= 0 && this.#jitter < 1)) {
      throw new RangeError(`Cannot use jitter "${this.#jitter}": outside 0..1`);
    }
  }

  /** Consecutive failed dials since the last success. */
  get failures(): number {
    return this.#failures;
  }

  /** A dial failed: the wait before the next attempt, ms. */
  failed(): number {
    const exponent = Math.min(this.#failures, 30);
    this.#failures++;
    const wait = Math.min(this.#base * 2 ** exponent, this.#cap);
    return Math.round(wait * (1 - this.#jitter + 2 * this.#jitter * this.#random()));
  }

  /** A dial succeeded: the next failure waits the base time again. */
  succeeded(): void {
    this.#failures = 0;
  }

  /** An established session ended: the delay of the immediate redial, ms (0..immediateMs). */
  ended(): number {
    this.#failures = 0;
    return Math.round(this.#immediate * this.#random());
  }
}
