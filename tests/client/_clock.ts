// A feed on an injected clock: time moves only when the test moves it,
// while the network (real servers) answers in real time in between.
import { ManualClock } from "../support/manual_clock.ts";

/** A manual clock that starts at the real time (tokens carry real `exp`s). */
export function clockAtNow(): ManualClock {
  return new ManualClock(Date.now());
}

/** Lets the event loop run once: I/O completions and whatever they start. */
export function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Moves `clock` forward by `ms` in steps of `stepMs`, letting real I/O run
 * after each step (`realMs` of real time, default one turn), so requests
 * sent at a simulated moment are answered before the next one.
 */
export async function advance(
  clock: ManualClock,
  ms: number,
  stepMs: number,
  realMs = 0,
): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    clock.advance(Math.min(stepMs, ms - done));
    await (realMs > 0 ? new Promise((r) => setTimeout(r, realMs)) : turn());
  }
}

/**
 * Waits until `cond()` holds while the clock moves 50 ms for every few real
 * milliseconds, so retries and backoffs on the clock can happen meanwhile.
 */
export async function untilOnClock(
  clock: ManualClock,
  cond: () => boolean,
  what: string,
): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (cond()) return;
    clock.advance(50);
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`Timed out waiting for ${what}`);
}
