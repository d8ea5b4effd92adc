/** What a serving loop waits on, and what wakes it. */
import type { TrackCursor } from "../track/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

const RESOLVED = Promise.resolve();

/**
 * The one wake of a loop that waits on one promise at a time: a write, a
 * close, an update, the end of the session or a deadline resolves it. One
 * callback shared by every wait, so waiting allocates nothing but the
 * promise. A wake while the loop is busy elsewhere (writing, waiting for a
 * slot) is kept for its next wait.
 */
export class LoopWake {
  #resume: (() => void) | undefined;
  #woken = false;
  // One timer for the earliest deadline, re-armed only when an earlier one comes up.
  #timer: unknown;
  #timerAt = Infinity;
  readonly #timers: Timers;
  readonly #now: () => number;

  /** Wakes on `timers`, reading deadlines on `now` (default the system's and Date.now). */
  constructor(timers: Timers = systemTimers, now: () => number = Date.now) {
    this.#timers = timers;
    this.#now = now;
  }

  /** Wakes the loop now, or at its next wait when it is busy (bound: usable as a listener). */
  readonly wake = (): void => {
    const resume = this.#resume;
    this.#resume = undefined;
    if (resume) resume();
    else this.#woken = true;
  };

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.wake();
  };

  /** Wakes the loop at `at` (ms on Date.now), unless as early a deadline is armed already. */
  wakeAt(at: number): void {
    if (at >= this.#timerAt) return;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#timers.setTimeout(this.#onTimer, Math.max(1, at - this.#now()));
  }

  /**
   * Waits for a wake, or the next change of `cursor`; at once when one came
   * while the loop was busy. Registers synchronously, so nothing written
   * since the loop's last poll is missed.
   */
  wait(cursor: TrackCursor): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return RESOLVED;
    }
    // Not an async function: a waiting loop holds this one promise, no suspended frame of its
    // own. A wake that comes after this one resolved it, before the loop polls, is kept for the
    // next wait (one poll that may find nothing).
    return new Promise<void>((resolve) => {
      this.#resume = resolve;
      cursor.onChange(this.wake);
    });
  }

  /** Cancels the deadline timer. */
  dispose(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
  }
}
