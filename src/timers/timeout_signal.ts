import { systemTimers, type Timers } from "./mod.ts";

/**
 * `AbortSignal.timeout` on injected timers: aborts after `ms` with the same
 * reason (a `TimeoutError` DOMException), and, like it, its pending timer
 * does not keep the process alive.
 *
 * @example
 * ```ts
 * const response = await fetch(url, { signal: timeoutSignal(10_000, timers) });
 * ```
 */
export function timeoutSignal(ms: number, timers: Timers = systemTimers): AbortSignal {
  const controller = new AbortController();
  const handle = timers.setTimeout(
    () =>
      controller.abort(
        new DOMException("The operation was aborted due to timeout", "TimeoutError"),
      ),
    Math.max(0, ms),
  );
  timers.unref?.(handle);
  return controller.signal;
}
