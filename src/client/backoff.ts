/** Waiting between attempts: exponential backoff with jitter, and a sleep that an abort ends. */
import { systemTimers, type Timers } from "../timers/mod.ts";

/** Delays for repeated failures: 250 ms doubling up to `max` (default 2 s), each ±20%. */
export class Backoff {
  readonly #first: number;
  readonly #max: number;
  readonly #random: () => number;
  #failures = 0;

  /** `first` and `max` in ms; `random` in [0, 1) (default Math.random). */
  constructor(first = 250, max = 2_000, random: () => number = Math.random) {
    this.#first = first;
    this.#max = max;
    this.#random = random;
  }

  /** The delay before the next attempt, ms; each call counts one more failure. */
  next(): number {
    const base = Math.min(this.#max, this.#first * 2 ** Math.min(this.#failures, 16));
    this.#failures++;
    return Math.round(base * (0.8 + 0.4 * this.#random()));
  }

  /** An attempt succeeded: the next failure waits the first delay again. */
  reset(): void {
    this.#failures = 0;
  }
}

/** Resolves after `ms` on `timers`, or at once when `signal` aborts (never rejects). */
export function sleep(
  ms: number,
  signal?: AbortSignal,
  timers: Timers = systemTimers,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timers.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = timers.setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}
