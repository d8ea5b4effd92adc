/** A served subscription's group streams not ended yet, as a list linked through its entries. */

/** One stream of the list: its send, its place in the subscription, and whether it may expire. */
export interface OpenStream<T> {
  /** The group's send. */
  readonly send: T;
  /** Its place in the subscription, which its send order is made from. */
  readonly place: number;
  /** Whether it is reset once it outlives the max latency (it started while one was set). */
  expires: boolean;
  /** @internal */
  prev: OpenStream<T> | undefined;
  /** @internal */
  next: OpenStream<T> | undefined;
}

/**
 * The streams of a subscription not ended yet, oldest first. Each group's
 * send goes in when it starts and out when its stream ended, tens of
 * thousands of times a second on a busy relay. Linked through the entries
 * rather than held in a `Map` or `Set`: short-lived objects that passed
 * through a long-lived `Map` or `Set` survived V8's young-generation
 * collections far more often, though deleted as soon as they were done, so
 * every group's stream objects were copied, promoted and left to the full
 * collector. With the sends in a `Map` and a `Set`, the relay spent about 19
 * µs of CPU per one-frame group delivered to 100 subscribers instead of 12
 * (docs/relay.md, "Fan-out performance").
 */
export class OpenStreams<T> {
  #first: OpenStream<T> | undefined;
  #last: OpenStream<T> | undefined;
  #size = 0;
  #expiring = 0;

  /** Streams in the list. */
  get size(): number {
    return this.#size;
  }

  /** Streams in the list that may expire. */
  get expiring(): number {
    return this.#expiring;
  }

  /** Adds the stream of `send` at `place`; `expires` as in {@linkcode OpenStream}. */
  add(send: T, place: number, expires: boolean): OpenStream<T> {
    const entry: OpenStream<T> = { send, place, expires, prev: this.#last, next: undefined };
    if (this.#last) this.#last.next = entry;
    else this.#first = entry;
    this.#last = entry;
    this.#size++;
    if (expires) this.#expiring++;
    return entry;
  }

  /** The stream will not expire any more (it expired, or was taken out of expiry). */
  settle(entry: OpenStream<T>): void {
    if (!entry.expires) return;
    entry.expires = false;
    this.#expiring--;
  }

  /** Takes the stream out of the list; its links are cleared, so it holds nothing alive. */
  remove(entry: OpenStream<T>): void {
    this.settle(entry);
    const { prev, next } = entry;
    if (prev) prev.next = next;
    else if (this.#first === entry) this.#first = next;
    else return; // not in the list (removed before)
    if (next) next.prev = prev;
    else this.#last = prev;
    entry.prev = entry.next = undefined;
    this.#size--;
  }

  /** The streams, oldest first; removing the current one while iterating is allowed. */
  *[Symbol.iterator](): IterableIterator<OpenStream<T>> {
    let entry = this.#first;
    while (entry) {
      const next = entry.next;
      yield entry;
      entry = next;
    }
  }
}
