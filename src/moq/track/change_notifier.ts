import { afterTurn } from "../../timers/mod.ts";

/**
 * Wakes a track's waiting cursors when it changes (a write, a close). With
 * `batch`, the writes of one event-loop turn wake them once, after the turn,
 * so they take every group of the turn at once.
 */
export class ChangeNotifier {
  readonly #batch: boolean;
  #wakePending = false;
  // Armed only while someone waits, so a write nobody awaits allocates nothing.
  #changed: Promise<void> | undefined;
  #notify: (() => void) | undefined;
  readonly #waiters = new Set<() => void>();

  readonly #beforeWake: (() => void) | undefined;

  /**
   * A notifier that wakes at once, or (`batch`) once after the turn of a
   * write, calling `beforeWake` first.
   */
  constructor(batch: boolean, beforeWake?: () => void) {
    this.#batch = batch;
    this.#beforeWake = beforeWake;
  }

  /** A group was written: wakes the waiters now, or after this turn when batching. */
  written(): void {
    if (!this.#batch) return this.wake();
    if (this.#wakePending) return;
    this.#wakePending = true;
    afterTurn(this.#wakeAfterTurn);
  }

  readonly #wakeAfterTurn = (): void => {
    this.#wakePending = false;
    this.wake();
  };

  /** Wakes every waiter now. */
  wake(): void {
    this.#beforeWake?.();
    const notify = this.#notify;
    this.#changed = undefined;
    this.#notify = undefined;
    notify?.();
    if (this.#waiters.size === 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  /** Resolves at the next wake, or when `signal` aborts (no leftover listeners). */
  wait(signal?: AbortSignal): Promise<void> {
    if (!signal) {
      return this.#changed ??= new Promise((resolve) => {
        this.#notify = resolve;
      });
    }
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = (): void => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Calls `callback` once at the next wake (the same function registered twice, once). */
  onChange(callback: () => void): void {
    this.#waiters.add(callback);
  }
}
