/**
 * A single-consumer async queue that applies back-pressure: producers push,
 * one consumer iterates, and `push` resolves only while the queue is below
 * its high-water mark, so a reader loop awaiting it is paced by the
 * consumer. Nothing is dropped unless the owner calls `shift`.
 */
export class BackpressureQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  readonly #highWater: number;
  #waiter: (() => void) | undefined;
  #space: (() => void) | undefined;
  #ended = false;
  #error: unknown = undefined;
  #onReturn: (() => void) | undefined;

  /** `onReturn` runs once when the consumer stops early (break / return). */
  constructor(highWater = 1024, onReturn?: () => void) {
    this.#highWater = highWater;
    this.#onReturn = onReturn;
  }

  /** Number of queued items. */
  get size(): number {
    return this.#items.length;
  }

  /** True once ended. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Adds an item; resolves when there is room. Ignored after the end. */
  push(item: T): Promise<void> {
    if (this.#ended) return Promise.resolve();
    this.#items.push(item);
    this.#wake();
    if (this.#items.length < this.#highWater) return Promise.resolve();
    return new Promise((resolve) => {
      this.#space = resolve;
    });
  }

  /** Removes and returns the oldest item (used to drop when behind). */
  shift(): T | undefined {
    return this.#items.shift();
  }

  /** Ends the queue; with an error the consumer's next read throws it after draining. */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#wake();
    this.#space?.();
    this.#space = undefined;
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }

  /** Waits for and returns the next item; undefined at the end. */
  async next(): Promise<T | undefined> {
    for (;;) {
      if (this.#items.length > 0) {
        const item = this.#items.shift() as T;
        if (this.#items.length < this.#highWater) {
          const s = this.#space;
          this.#space = undefined;
          s?.();
        }
        return item;
      }
      if (this.#ended) {
        if (this.#error !== undefined) throw this.#error;
        return undefined;
      }
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
      });
    }
  }

  /** Iterates until the end; breaking out runs the `onReturn` hook. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: async (): Promise<IteratorResult<T>> => {
        const value = await this.next();
        return value === undefined ? { done: true, value: undefined } : { done: false, value };
      },
      return: (): Promise<IteratorResult<T>> => {
        this.end();
        const hook = this.#onReturn;
        this.#onReturn = undefined;
        hook?.();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}
