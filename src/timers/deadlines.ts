import { systemTimers, type Timers } from "./mod.ts";

/** Options of {@link Deadlines}. */
export interface DeadlinesOptions {
  /** Where the one timer is scheduled (default: the global timers). */
  readonly timers?: Timers;
  /** Millisecond clock the deadlines are measured on (default `performance.now`). */
  readonly now?: () => number;
  /**
   * True to let the process exit while deadlines are pending (system timers
   * only); false keeps it alive until they are met or fire, as a plain
   * timer would.
   */
  readonly unref?: boolean;
}

interface Waiter {
  readonly at: number;
  readonly expire: () => void;
}

/**
 * Many deadlines on one timer. A timer per call costs a few microseconds
 * to set and clear, a large share of a small request's CPU; here adding and
 * cancelling a deadline is a set operation, and one timer is armed for the
 * earliest deadline and re-armed as it fires.
 *
 * @example
 * ```ts
 * const deadlines = new Deadlines();
 * const cancel = deadlines.add(5000, () => console.log("too late"));
 * cancel(); // met in time
 * ```
 */
export class Deadlines {
  readonly #timers: Timers;
  readonly #now: () => number;
  readonly #unref: boolean;
  readonly #waiting = new Set<Waiter>();
  #timer: unknown;
  #timerAt = Infinity;

  /** Creates an empty set of deadlines. */
  constructor(options: DeadlinesOptions = {}) {
    this.#timers = options.timers ?? systemTimers;
    this.#now = options.now ?? (() => performance.now());
    this.#unref = options.unref ?? false;
  }

  /** Calls `expire` once `ms` pass, unless the returned cancel function is called first. */
  add(ms: number, expire: () => void): () => void {
    const waiter: Waiter = { at: this.#now() + ms, expire };
    this.#waiting.add(waiter);
    this.#arm(waiter.at);
    return () => {
      // The last one cancelled takes the timer with it: nothing is left pending (a relay's
      // session leases, say, once every session ended).
      if (this.#waiting.delete(waiter) && this.#waiting.size === 0) this.#disarm();
    };
  }

  /**
   * These deadlines behind the {@linkcode Timers} interface, for code written against timers
   * that should share this one timer (such as one per session): `setTimeout` adds a deadline,
   * and its handle is the function that cancels it.
   */
  readonly timers: Timers = {
    setTimeout: (fn, ms) => this.add(ms, fn),
    clearTimeout: (handle) => (handle as (() => void) | undefined)?.(),
  };

  /** Deadlines not yet met, cancelled or fired. */
  get size(): number {
    return this.#waiting.size;
  }

  // A cancelled deadline leaves the timer armed (unless it was the last); the
  // sweep it causes finds nothing due and re-arms for the next one, if any.
  #arm(at: number): void {
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timerAt = at;
    const timer = this.#timers.setTimeout(() => this.#sweep(), Math.max(0, at - this.#now()));
    if (this.#unref && typeof timer === "number") Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #sweep(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#now();
    let next = Infinity;
    const due: Waiter[] = [];
    for (const w of this.#waiting) {
      if (w.at <= now) {
        this.#waiting.delete(w);
        due.push(w);
      } else if (w.at < next) {
        next = w.at;
      }
    }
    if (next < Infinity) this.#arm(next);
    for (const w of due) w.expire();
  }
}
