/**
 * Which group sequences were seen recently, to take each group once even
 * when groups arrive out of order (each travels on its own stream, so a
 * retransmitted one can land after newer ones). A bitmap covers the
 * `size` sequences up to the highest seen; anything older is "old": too
 * far back to tell, so callers treat it as already handled.
 */
export class SequenceWindow {
  readonly #bits: Uint32Array;
  readonly #mask: number;
  #highest = -1;

  /** A window over the latest `size` sequences (rounded up to a power of two, at least 64). */
  constructor(size = 4096) {
    let n = 64;
    while (n < size) n *= 2;
    this.#bits = new Uint32Array(n / 32);
    this.#mask = n - 1;
  }

  /** The highest sequence seen, or -1 before the first. */
  get highest(): number {
    return this.#highest;
  }

  /** The oldest sequence the window can still answer for. */
  get floor(): number {
    return Math.max(0, this.#highest - this.#mask);
  }

  /** "new" if `sequence` was not seen, "seen" if it was, "old" if it is below the window. */
  check(sequence: number): "new" | "seen" | "old" {
    if (sequence > this.#highest) return "new";
    if (sequence < this.floor) return "old";
    const slot = sequence & this.#mask;
    return (this.#bits[slot >>> 5]! & (1 << (slot & 31))) === 0 ? "new" : "seen";
  }

  /** Marks `sequence` seen; returns false when it was already seen or is too old to tell. */
  add(sequence: number): boolean {
    if (sequence > this.#highest) {
      // Forget the slots the window slides over (they now stand for newer sequences).
      const from = Math.max(this.#highest + 1, sequence - this.#mask);
      for (let s = from; s < sequence; s++) this.#clear(s & this.#mask);
      this.#highest = sequence;
      this.#set(sequence & this.#mask);
      return true;
    }
    if (this.check(sequence) !== "new") return false;
    this.#set(sequence & this.#mask);
    return true;
  }

  /** Forgets `sequence` (within the window), so it is taken again: a group abandoned mid-way. */
  forget(sequence: number): void {
    if (this.check(sequence) === "seen") this.#clear(sequence & this.#mask);
  }

  #set(slot: number): void {
    this.#bits[slot >>> 5]! |= 1 << (slot & 31);
  }

  #clear(slot: number): void {
    this.#bits[slot >>> 5]! &= ~(1 << (slot & 31));
  }
}
