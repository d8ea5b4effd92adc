const NONE: ReadonlyArray<readonly [number, number]> = [];

/**
 * The serving side's account of one subscription's sequences: the highest
 * group sent, and the ranges below it not sent yet. Groups reach a relay
 * out of order (each on its own stream), so a gap is first only "missing":
 * it becomes a drop (SUBSCRIBE_DROP) once it has been missing for a bounded
 * wait, and a late group that fills it is still sent.
 */
export class DeliveryGaps {
  readonly #waitMs: number;
  readonly #clock: () => number;
  // Open gaps, sorted by start; `since` is when the gap was noticed. Gaps
  // are added at the top, later than every open one, and a split keeps its
  // gap's time, so `since` never decreases along the list either: the first
  // gap is always the oldest.
  readonly #gaps: { start: number; end: number; since: number }[] = [];
  #highest = -1;

  /** Gaps are dropped after `waitMs`; `clock` is in ms (default Date.now). */
  constructor(waitMs: number, clock: () => number = Date.now) {
    this.#waitMs = waitMs;
    this.#clock = clock;
  }

  /** The highest sequence sent or expected, -1 before the first. */
  get highest(): number {
    return this.#highest;
  }

  /** The lowest sequence still missing, if any gap is open. */
  get firstMissing(): number | undefined {
    return this.#gaps[0]?.start;
  }

  /** Number of open gaps. */
  get open(): number {
    return this.#gaps.length;
  }

  /** Records a group sent: the next one, a jump (opening a gap), or a late one (filling one). */
  sent(sequence: number): void {
    if (this.#highest < 0 || sequence === this.#highest + 1) {
      this.#highest = sequence;
      return;
    }
    if (sequence > this.#highest) {
      this.#add(this.#highest + 1, sequence - 1);
      this.#highest = sequence;
      return;
    }
    this.#fill(sequence);
  }

  /**
   * Everything up to `end` (inclusive) is expected: what was not sent yet is
   * missing. Before any group was sent, `from` says where that range starts.
   */
  expect(end: number, from?: number): void {
    if (end <= this.#highest) return;
    const start = this.#highest >= 0 ? this.#highest + 1 : from;
    if (start !== undefined && start <= end) this.#add(start, end);
    this.#highest = end;
  }

  /** True when no gap is open at or below `sequence`. */
  settledThrough(sequence: number): boolean {
    const first = this.#gaps[0];
    return first === undefined || first.start > sequence;
  }

  /** When the oldest open gap turns into a drop, ms on the clock; undefined with none open. */
  nextDeadline(): number | undefined {
    const oldest = this.#gaps[0];
    return oldest === undefined ? undefined : oldest.since + this.#waitMs;
  }

  /** Removes and returns the gaps missing for longer than the wait (all with `all`), as inclusive ranges. */
  expired(all = false): ReadonlyArray<readonly [number, number]> {
    const cutoff = all ? Infinity : this.#clock() - this.#waitMs;
    let n = 0;
    while (n < this.#gaps.length && this.#gaps[n]!.since <= cutoff) n++;
    if (n === 0) return NONE;
    return this.#gaps.splice(0, n).map((g) => [g.start, g.end] as const);
  }

  #add(start: number, end: number): void {
    // Bounded: a subscriber with very many holes has its oldest declared dropped at once.
    if (this.#gaps.length >= 64) this.#gaps[0]!.since = -Infinity;
    this.#gaps.push({ start, end, since: this.#clock() });
  }

  #fill(sequence: number): void {
    const i = this.#gaps.findIndex((g) => sequence >= g.start && sequence <= g.end);
    if (i < 0) return;
    const g = this.#gaps[i]!;
    if (g.start === g.end) this.#gaps.splice(i, 1);
    else if (sequence === g.start) g.start++;
    else if (sequence === g.end) g.end--;
    else {
      // Split around the late group; both halves keep the time the gap was noticed.
      this.#gaps.splice(i + 1, 0, { start: sequence + 1, end: g.end, since: g.since });
      g.end = sequence - 1;
    }
  }
}
