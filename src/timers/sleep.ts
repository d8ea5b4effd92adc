import { systemTimers, type Timers } from "./mod.ts";

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
