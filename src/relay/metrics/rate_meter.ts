/**
 * Estimates a byte rate over a sliding window of one-second buckets, with an
 * injected clock so the estimate is exact in tests.
 */
export class RateMeter {
  readonly #buckets: number[];
  readonly #now: () => number;
  #second: number;

  /** Creates a meter over `windowSeconds` seconds. */
  constructor(now: () => number, windowSeconds = 5) {
    this.#now = now;
    this.#buckets = new Array(windowSeconds).fill(0);
    this.#second = Math.floor(now() / 1000);
  }

  #advance(): void {
    const s = Math.floor(this.#now() / 1000);
    const n = this.#buckets.length;
    for (let k = this.#second + 1; k <= s && k <= this.#second + n; k++) this.#buckets[k % n] = 0;
    if (s > this.#second) this.#second = s;
  }

  /** Records `bytes` now. */
  add(bytes: number): void {
    this.#advance();
    this.#buckets[this.#second % this.#buckets.length]! += bytes;
  }

  /** Bits per second over the window (rounded). */
  bitsPerSecond(): number {
    this.#advance();
    const total = this.#buckets.reduce((a, b) => a + b, 0);
    return Math.round((total * 8) / this.#buckets.length);
  }
}
