/**
 * A FIFO that never blocks its producer: `push` returns at once and, when
 * `limit` items already wait, the oldest is dropped. `next()` waits for an
 * item or resolves undefined once closed. Unbounded by default.
 */
export class DropOldestQueue<T> {
  #items: T[] = [];
  #waiters: ((v: T | undefined) => void)[] = [];
  #closed = false;
  readonly #limit: number;
  readonly #onDrop: ((item: T) => void) | undefined;

  /** `limit` bounds buffered items; the oldest is dropped (and passed to `onDrop`) when full. */
  constructor(limit = Infinity, onDrop?: (item: T) => void) {
    this.#limit = limit;
    this.#onDrop = onDrop;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Adds an item; returns false (and does nothing) when closed. */
  push(item: T): boolean {
    if (this.#closed) return false;
    const w = this.#waiters.shift();
    if (w) {
      w(item);
      return true;
    }
    this.#items.push(item);
    if (this.#items.length > this.#limit) {
      const dropped = this.#items.shift();
      if (dropped !== undefined) this.#onDrop?.(dropped);
    }
    return true;
  }

  /** The next item, or undefined once closed and drained. */
  next(): Promise<T | undefined> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Ends the queue: waiters get undefined; remaining items are returned to the caller. */
  close(): T[] {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w(undefined);
    return this.#items.splice(0);
  }
}
