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
  // Order among equal deadlines: first added, first fired.
  readonly seq: number;
  readonly expire: () => void;
  // Where it sits in the heap; -1 once fired or cancelled.
  index: number;
}

// Whether `a` is due before `b`.
function before(a: Waiter, b: Waiter): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * Many deadlines on one timer. A timer per call costs a few microseconds
 * to set and clear, a large share of a small request's CPU; here the
 * deadlines wait in a binary heap ordered by when they are due, one timer is
 * armed for the earliest and re-armed as it fires. Adding, cancelling and
 * firing one deadline take time logarithmic in how many are pending, so a
 * relay's session leases (one per session) cost the same per session at any
 * number of sessions.
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
  readonly #heap: Waiter[] = [];
  #seq = 0;
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
    const waiter: Waiter = { at: this.#now() + ms, seq: this.#seq++, expire, index: -1 };
    this.#push(waiter);
    this.#arm(waiter.at);
    return () => {
      if (waiter.index < 0) return; // fired or cancelled already
      this.#remove(waiter.index);
      // The last one cancelled takes the timer with it: nothing is left pending (a relay's
      // session leases, say, once every session ended).
      if (this.#heap.length === 0) this.#disarm();
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
    return this.#heap.length;
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
    const heap = this.#heap;
    const due: Waiter[] = [];
    while (heap.length > 0 && heap[0]!.at <= now) due.push(this.#remove(0));
    if (heap.length > 0) this.#arm(heap[0]!.at);
    for (const w of due) w.expire();
  }

  #push(w: Waiter): void {
    w.index = this.#heap.length;
    this.#heap.push(w);
    this.#up(w.index);
  }

  // Takes the waiter at `i` out of the heap, the last one filling its place.
  #remove(i: number): Waiter {
    const heap = this.#heap;
    const w = heap[i]!;
    const last = heap.pop()!;
    w.index = -1;
    if (last !== w) {
      heap[i] = last;
      last.index = i;
      this.#down(i);
      this.#up(last.index);
    }
    return w;
  }

  #up(i: number): void {
    const heap = this.#heap;
    const w = heap[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = heap[p]!;
      if (!before(w, parent)) break;
      heap[i] = parent;
      parent.index = i;
      i = p;
    }
    heap[i] = w;
    w.index = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const w = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(heap[r]!, heap[l]!) ? r : l;
      const child = heap[c]!;
      if (!before(child, w)) break;
      heap[i] = child;
      child.index = i;
      i = c;
    }
    heap[i] = w;
    w.index = i;
  }
}
