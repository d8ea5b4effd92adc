/**
 * Flow-control arithmetic (RFC 9000 §4): credit the peer granted us to
 * spend, windows we grant the peer, and the peer's stream-count limit.
 */

/** Credit granted by the peer (an absolute maximum it may raise) and what we spent of it. */
export class SendCredit {
  #max: number;
  #used = 0;
  #waiters: (() => void)[] = [];

  /** Starts with `max` granted (0 until the peer's parameters arrive; Infinity without flow control). */
  constructor(max = 0) {
    this.#max = max;
  }

  /** What may still be spent. */
  get available(): number {
    return Math.max(0, this.#max - this.#used);
  }

  /** What was spent so far. */
  get used(): number {
    return this.#used;
  }

  /** The current maximum. */
  get max(): number {
    return this.#max;
  }

  /** Spends `n` (the caller checked `available`). */
  take(n: number): void {
    this.#used += n;
  }

  /** Applies a new maximum; smaller values are ignored (RFC 9000 §4.1). */
  raise(max: number): void {
    if (max <= this.#max) return;
    this.#max = max;
    this.wake();
  }

  /** Resolves at the next raise (or `wake`). */
  wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Wakes every waiter (on a raise, or when the session ends). */
  wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
}

/**
 * A receive window we grant: the peer may send up to `limit` bytes in
 * total; as the application consumes bytes, the limit moves to
 * `consumed + window` once half the window is used (so MAX_DATA frames are
 * batched). Consumed means delivered to the application or discarded, so a
 * slow reader stops the peer instead of filling our memory.
 */
export class RecvWindow {
  /** The initial window (our transport parameter). */
  readonly window: number;
  #limit: number;
  #received = 0;
  #consumed = 0;

  /** Grants `window` bytes. */
  constructor(window: number) {
    this.window = window;
    this.#limit = window;
  }

  /** The limit advertised so far. */
  get limit(): number {
    return this.#limit;
  }

  /** Bytes received so far. */
  get received(): number {
    return this.#received;
  }

  /** Counts `n` more received bytes; false when that exceeds the limit (a flow-control violation). */
  receive(n: number): boolean {
    this.#received += n;
    return this.#received <= this.#limit;
  }

  /** Counts `n` bytes consumed; returns the new limit to advertise, or undefined when none is due. */
  consume(n: number): number | undefined {
    this.#consumed += n;
    if (this.#limit - this.#consumed > this.window / 2) return undefined;
    this.#limit = this.#consumed + this.window;
    return this.#limit;
  }
}

/**
 * How many streams of one direction the peer may open (a cumulative
 * count, RFC 9000 §4.6): `window` at a time; each stream the application
 * is done with makes room, announced in batches of half a window.
 */
export class StreamCountLimit {
  /** Streams the peer may have open at once (our transport parameter). */
  readonly window: number;
  #limit: number;
  #released = 0;

  /** Allows `window` streams. */
  constructor(window: number) {
    this.window = window;
    this.#limit = window;
  }

  /** The advertised cumulative limit. */
  get limit(): number {
    return this.#limit;
  }

  /** True when the peer may open the stream with this index. */
  allows(index: number): boolean {
    return index < this.#limit;
  }

  /** One stream is done; returns the new limit to advertise, or undefined when none is due. */
  release(): number | undefined {
    this.#released++;
    const next = this.#released + this.window;
    if (next - this.#limit < Math.max(1, Math.floor(this.window / 2))) return undefined;
    this.#limit = next;
    return next;
  }
}
