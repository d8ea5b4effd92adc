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

import { Backoff } from "../../timers/mod.ts";

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
  readonly #backoff: Backoff;
  readonly #immediate: number;
  readonly #random: () => number;

  /** Makes a schedule with no failures yet. */
  constructor(options: DialBackoffOptions = {}) {
    this.#random = options.random ?? Math.random;
    this.#backoff = new Backoff({
      baseMs: options.baseMs ?? 1000,
      capMs: options.capMs ?? 30_000,
      jitter: options.jitter ?? 0.25,
      random: this.#random,
    });
    this.#immediate = options.immediateMs ?? 100;
  }

  /** Consecutive failed dials since the last success. */
  get failures(): number {
    return this.#backoff.failures;
  }

  /** A dial failed: the wait before the next attempt, ms. */
  failed(): number {
    return this.#backoff.next();
  }

  /** A dial succeeded: the next failure waits the base time again. */
  succeeded(): void {
    this.#backoff.reset();
  }

  /** An established session ended: the delay of the immediate redial, ms (0..immediateMs). */
  ended(): number {
    this.#backoff.reset();
    return Math.round(this.#immediate * this.#random());
  }
}
