// Waiting for something another task does, without asserting any delay.
import { withDeadline } from "../../src/timers/mod.ts";

/** Waits until `cond()` holds, checking every 5 ms; throws naming `what` after about 50 s. */
export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

/** Settles like `promise`, or throws naming `what` after `ms` (a test never hangs on it). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return withDeadline(
    promise,
    ms,
    () => new Error(`Timed out after ${ms} ms waiting for ${what}`),
  );
}
