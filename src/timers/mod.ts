/**
 * Timer functions, passed in wherever behaviour depends on time passing
 * (key-set polls, HTTP/3 timeouts, relay redials), so tests control them.
 *
 * @module
 */

/** Schedules and cancels one-shot calls; tests pass their own. */
export interface Timers {
  /** Schedules `fn` once after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending `setTimeout` (a handle it returned). */
  clearTimeout(handle: unknown): void;
  /** Lets the process exit while `handle` is pending (Deno); timers without a process skip it. */
  unref?(handle: unknown): void;
}

/** The global timers. */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
  unref: (handle) => {
    const deno = (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno;
    deno?.unrefTimer(handle as number);
  },
};

export { Deadlines, type DeadlinesOptions } from "./deadlines.ts";
export { Backoff, type BackoffOptions } from "./backoff.ts";
export { sleep } from "./sleep.ts";
export { withDeadline } from "./deadline.ts";
export { timeoutSignal } from "./timeout_signal.ts";
export { afterTurn } from "./after_turn.ts";
export { type RetryOptions, retryUntilDone } from "./retry.ts";
