/** What a serving loop waits on, and what wakes it. */
import type { TrackCursor } from "../track/mod.ts";

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
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;

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
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(this.#onTimer, Math.max(1, at - Date.now()));
  }

  /**
   * Waits for a wake, or the next change of `cursor`; at once when one came
   * while the loop was busy. Registers synchronously, so nothing written
   * since the loop's last poll is missed.
   */
  async wait(cursor: TrackCursor): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      this.#resume = resolve;
      cursor.onChange(this.wake);
    });
    this.#woken = false;
  }

  /** Cancels the deadline timer. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }
}
