// The one injected clock for tests of timing: `now()` in milliseconds (as `Timers` and
// `Date.now` count), `nowNs()` in Unix nanoseconds (as the ledger's `NanoClock` counts), and
// timers that fire only when the test advances time, in due order.

/** A clock and timers the test moves by hand. */
export class ManualClock {
  #now: number;
  #next = 1;
  readonly #pending = new Map<number, { at: number; fn: () => void }>();

  /** Starts at `start` ms. */
  constructor(start = 1_000_000) {
    this.#now = start;
  }

  /** The current time, ms. */
  readonly now = (): number => this.#now;

  /** The current time in nanoseconds (a ledger's `NanoClock`), exact to the nanosecond. */
  readonly nowNs = (): bigint => {
    const whole = Math.floor(this.#now);
    return BigInt(whole) * 1_000_000n + BigInt(Math.round((this.#now - whole) * 1e6));
  };

  /** Schedules `fn` at now + `ms`. */
  readonly setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.#next++;
    this.#pending.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  };

  /** Cancels a scheduled call. */
  readonly clearTimeout = (handle: unknown): void => {
    this.#pending.delete(handle as number);
  };

  /** Delays of the calls still pending, from now, soonest first. */
  get pending(): number[] {
    return [...this.#pending.values()].map((p) => p.at - this.#now).sort((a, b) => a - b);
  }

  /** Moves time forward by `ms`, firing every call that falls due, in order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#pending) {
        if (entry[1].at <= until && (!due || entry[1].at < due[1].at)) due = entry;
      }
      if (!due) break;
      this.#pending.delete(due[0]);
      this.#now = due[1].at;
      due[1].fn();
    }
    this.#now = until;
  }

  /** Moves time to the next pending call and fires it; returns the delay it had. */
  fireNext(): number {
    const next = this.pending[0];
    if (next === undefined) throw new Error("No timer is pending");
    this.advance(next);
    return next;
  }
}
