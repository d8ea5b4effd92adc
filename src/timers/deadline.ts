import { systemTimers, type Timers } from "./mod.ts";

/**
 * Settles like `promise`, or rejects with `error()` after `ms` if it has not
 * settled by then. What `promise` yields after the deadline is handed to
 * `late` (close a session or a subscription nobody will use), so a request
 * that answers too late leaks nothing.
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  error: () => Error,
  late: (value: T) => void = () => {},
  timers: Timers = systemTimers,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = timers.setTimeout(() => {
      expired = true;
      reject(error());
    }, Math.max(0, ms));
    promise.then((value) => {
      if (!expired) {
        timers.clearTimeout(timer);
        resolve(value);
      } else late(value);
    }, (e: unknown) => {
      if (expired) return;
      timers.clearTimeout(timer);
      reject(e);
    });
  });
}
