import type { Timers } from "../timers/mod.ts";

/** One waiter woken by a poke or after a time: how a feed's pump waits for something to change. */
export class Wake {
  readonly #timers: Timers;
  #wake: (() => void) | undefined;

  /** A wake whose timed waits run on `timers`. */
  constructor(timers: Timers) {
    this.#timers = timers;
  }

  /** Ends the current wait, if one is running. */
  poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Waits for a poke or `ms` (Infinity: a poke only). */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: unknown;
      this.#wake = () => {
        if (timer !== undefined) this.#timers.clearTimeout(timer);
        resolve();
      };
      if (Number.isFinite(ms)) timer = this.#timers.setTimeout(() => this.poke(), Math.max(0, ms));
    });
  }
}
