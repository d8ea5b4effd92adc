// Waiting for something another task does, without asserting any delay.
import { afterTurn, withDeadline } from "../../src/timers/mod.ts";

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

/**
 * Resolves once the event loop has turned `turns` times (setImmediate), so
 * every promise chain started before, and whatever those defer to the next
 * turn, has run: what has not happened by then waits on something else (I/O,
 * a timer, a slot). For "this does not happen" over in-process work, in
 * place of a sleep.
 */
export async function settled(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => afterTurn(resolve));
}
