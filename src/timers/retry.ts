import { Backoff } from "./backoff.ts";
import { sleep } from "./sleep.ts";
import { systemTimers, type Timers } from "./mod.ts";

/** Options of {@linkcode retryUntilDone}. */
export interface RetryOptions {
  /** Stops retrying (a failure is then the last attempt). */
  readonly signal: AbortSignal;
  /** Waits between attempts (default 250 ms doubling up to 10 s, ± half). */
  readonly backoff?: Backoff;
  /** Told of every failed attempt. */
  readonly onError?: (error: unknown) => void;
  /** Timers for the waits. */
  readonly timers?: Timers;
}

/**
 * Calls `attempt` until it resolves or `options.signal` aborts, waiting with
 * backoff after each failure. Resolves true when an attempt succeeded, false
 * when it was stopped first; never rejects.
 */
export async function retryUntilDone(
  attempt: () => Promise<void>,
  options: RetryOptions,
): Promise<boolean> {
  const backoff = options.backoff ?? new Backoff({ baseMs: 250, capMs: 10_000, jitter: 0.5 });
  while (!options.signal.aborted) {
    try {
      await attempt();
      return true;
    } catch (error) {
      options.onError?.(error);
    }
    await sleep(backoff.next(), options.signal, options.timers ?? systemTimers);
  }
  return false;
}
