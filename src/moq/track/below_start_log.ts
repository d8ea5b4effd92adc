import type { CachedGroup } from "./cached_group.ts";

// Writes remembered (between this many and twice as many).
const LOG_SIZE = 1024;

/**
 * The writes below some open cursor's start, by arrival index: a cursor that
 * fell out of the ring must not count evicted groups it never asked for,
 * and their sequences went with them. Complete from arrival `from` on;
 * cleared when the last cursor closes. Small in the common case: a cursor
 * starts at or below the latest, so only late groups land here.
 */
export class BelowStartLog {
  // The highest start of a cursor opened since the log was last cleared.
  #maxStart = -1;
  #from = 0;
  readonly #index: number[] = [];
  readonly #sequence: number[] = [];

  /** A cursor starting at `start` opened. */
  opened(start: number): void {
    if (start > this.#maxStart) this.#maxStart = start;
  }

  /** Notes a write when it is below some open cursor's start. */
  wrote(group: CachedGroup): void {
    if (group.sequence >= this.#maxStart) return;
    this.#index.push(group.index);
    this.#sequence.push(group.sequence);
    if (this.#index.length <= 2 * LOG_SIZE) return;
    // Amortised: drop the older half at once. A cursor still behind what
    // was dropped counts those evicted groups as skipped (it cannot tell).
    this.#from = this.#index[LOG_SIZE - 1]! + 1;
    this.#index.splice(0, LOG_SIZE);
    this.#sequence.splice(0, LOG_SIZE);
  }

  /** Nobody reads any more (`written` arrivals so far): nothing logged concerns any cursor. */
  clear(written: number): void {
    this.#maxStart = -1;
    this.#from = written;
    this.#index.length = 0;
    this.#sequence.length = 0;
  }

  /**
   * How many of the arrivals `from` to `to` (exclusive, evicted from the
   * ring) had a sequence below `floor`, where `floor` is the start of a
   * cursor open since before `from`. Arrivals the log no longer covers are
   * counted as not below: skipped.
   */
  evictedBelow(from: number, to: number, floor: number): number {
    const start = Math.max(from, this.#from);
    let n = 0;
    for (let i = 0; i < this.#index.length; i++) {
      const index = this.#index[i]!;
      if (index >= to) break;
      if (index >= start && this.#sequence[i]! < floor) n++;
    }
    return n;
  }
}
