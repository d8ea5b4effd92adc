import { CachedGroup, type GroupFrames } from "./cached_group.ts";

/** Most groups a producer keeps beyond its cache size for a burst (`burstMs`). */
export const MAX_BURST_GROUPS = 256;

/**
 * Most dropped arrivals abandoned part-way a {@linkcode GroupRing} remembers
 * ({@linkcode GroupRing.abandonedGone}): as many as the late groups a
 * producer still takes below its newest (4096).
 */
export const MAX_ABANDONED_GONE = 4096;

/** How much of a track a {@linkcode GroupRing} keeps besides its group count. */
export interface RingLimits {
  /** Groups written longer ago than this many ms are dropped (0: no age limit). */
  readonly maxAgeMs?: number;
  /** Payload bytes held at most (default: no limit); only the newest group may go over. */
  readonly maxBytes?: number;
}

/**
 * A track's recent groups in arrival order, each numbered by its arrival
 * index. Cursors follow it by index, so a late group is simply the next
 * arrival for every cursor that has not passed it. It holds `size` groups,
 * and up to {@linkcode MAX_BURST_GROUPS} more while the oldest is young:
 * not yet handed to the cursors ({@linkcode GroupRing.handedOver}), or
 * handed over less than `burstMs` ago; groups older than `maxAgeMs` go even
 * within the count.
 * Neither count nor age drops a group still being written or the newest
 * complete group (by sequence): a joiner of a media track gets its current
 * GOP from the first frame, and a whole-group reader the last complete one.
 * The byte budget is hard (only a group on its own may exceed it), as is
 * the count plus {@linkcode MAX_BURST_GROUPS}, so a publisher that leaves
 * groups open cannot make the ring grow without bound. Evictions happen as
 * groups arrive: for the count and the age oldest arrival first, for the
 * byte budget lowest sequence first, so late groups (retransmitted, or
 * repaired) arriving after newer ones cannot push the newest out. A group
 * the budget drops from among later arrivals leaves its place in arrival
 * order ({@linkcode DroppedGroup}) until the oldest arrival passes it.
 */
export class GroupRing {
  // By arrival; the first is always a held group.
  readonly #slots: (CachedGroup | DroppedGroup)[] = [];
  #held = 0;
  readonly #size: number;
  readonly #burstMs: number;
  readonly #clock: () => number;
  readonly #maxAgeMs: number;
  readonly #bytes: RingBytes | undefined;
  #written = 0;
  // When the newest arrival dropped from the front (just before `oldest`) was written.
  #goneWrittenAt = -Infinity;
  // The hand-overs of arrivals still held, oldest first: those below `end` (and at or above
  // the previous one's end) were handed to the cursors at `at`. At most one per arrival held.
  readonly #handOvers: { end: number; at: number }[] = [];
  // Sequences whose last arrival was abandoned part-way (reset) when it was dropped, until the
  // sequence arrives again: such a group was never held whole. Made at the first, oldest first,
  // at most MAX_ABANDONED_GONE.
  #abandonedGone: Set<number> | undefined;

  /** An empty ring of `size` groups (at least 1). */
  constructor(size: number, burstMs: number, clock: () => number, limits: RingLimits = {}) {
    this.#size = Math.max(1, size);
    this.#burstMs = Math.max(0, burstMs);
    this.#clock = clock;
    this.#maxAgeMs = Math.max(0, limits.maxAgeMs ?? 0);
    const maxBytes = limits.maxBytes ?? Infinity;
    // Sizes are only read with a budget: reading one makes a lazily given group's frames.
    this.#bytes = maxBytes < Infinity ? new RingBytes(maxBytes) : undefined;
  }

  /** Payload bytes held now (counted only with a byte budget; 0 without). */
  get bytes(): number {
    return this.#bytes?.total ?? 0;
  }

  /** How many groups arrived so far: the arrival index of the next one. */
  get written(): number {
    return this.#written;
  }

  /** The arrival index of the oldest group held (`written` when none is). */
  get oldest(): number {
    return this.#slots[0]?.index ?? this.#written;
  }

  /**
   * When the arrival just before {@linkcode oldest} was written (-Infinity
   * while none has gone): arrivals are stamped in order, so every arrival the
   * ring no longer holds or places was written no later than this.
   */
  get goneWrittenAt(): number {
    return this.#goneWrittenAt;
  }

  /** Groups held now. */
  get length(): number {
    return this.#held;
  }

  /**
   * Takes a group as the next arrival, evicting what the ring's bounds no
   * longer allow; `estimate` is the size of frames given as a function.
   */
  append(
    sequence: number,
    frames: GroupFrames,
    timestamp: bigint,
    now: number,
    estimate?: number,
  ): CachedGroup {
    const group = new CachedGroup(sequence, frames, timestamp, this.#written++, now, estimate);
    this.#abandonedGone?.delete(sequence);
    this.#slots.push(group);
    this.#held++;
    const bytes = this.#bytes;
    if (bytes) {
      bytes.added(group);
      while (this.#held > 1 && bytes.over()) this.#drop(this.#lowest());
    }
    while (this.#held > 1 && this.#expendable(this.#slots[0] as CachedGroup, now)) this.#drop(0);
    return group;
  }

  // Whether the oldest arrival goes: over the hard count, or over count or age and not kept.
  #expendable(oldest: CachedGroup, now: number): boolean {
    // Dropped places count too, so they cannot pile up behind a kept group.
    if (this.#slots.length > this.#size + MAX_BURST_GROUPS) return true;
    const overCount = this.#held > this.#size && !this.#young(oldest, now);
    const overAge = this.#maxAgeMs > 0 && now - oldest.writtenAt > this.#maxAgeMs;
    return (overCount || overAge) && !this.#kept(oldest);
  }

  // Still being written, or the newest complete group by sequence.
  #kept(group: CachedGroup): boolean {
    if (group.live?.state === "open") return true;
    if (!group.complete) return false;
    const slots = this.#slots;
    for (let i = slots.length - 1; i > 0; i--) {
      const g = slots[i]!;
      if (g instanceof CachedGroup && g.sequence > group.sequence && g.complete) return false;
    }
    return true;
  }

  // The slot of the held group with the lowest sequence (the earliest arrival of equals).
  #lowest(): number {
    const slots = this.#slots;
    let lowest = 0;
    for (let i = 1; i < slots.length; i++) {
      const g = slots[i]!;
      if (g instanceof CachedGroup && g.sequence < slots[lowest]!.sequence) lowest = i;
    }
    return lowest;
  }

  // Drops the held group in slot `i`: the oldest arrival goes with the dropped places
  // behind it, one from among later arrivals leaves its place.
  #drop(i: number): void {
    const slots = this.#slots;
    const gone = slots[i] as CachedGroup;
    this.#held--;
    this.#bytes?.removed(gone);
    if (gone.live?.state === "reset") this.#goneAbandoned(gone, i);
    if (i > 0) {
      slots[i] = { index: gone.index, sequence: gone.sequence, writtenAt: gone.writtenAt };
      return;
    }
    slots.shift();
    this.#goneWrittenAt = gone.writtenAt;
    while (slots.length > 0 && !(slots[0] instanceof CachedGroup)) {
      this.#goneWrittenAt = slots.shift()!.writtenAt;
    }
  }

  // Remembers a dropped arrival abandoned part-way, unless a later arrival of its sequence is
  // held (a group abandoned is taken again whole; the earlier arrival of equals drops first).
  #goneAbandoned(gone: CachedGroup, i: number): void {
    const slots = this.#slots;
    for (let j = i + 1; j < slots.length; j++) {
      const g = slots[j]!;
      if (g instanceof CachedGroup && g.sequence === gone.sequence) return;
    }
    const set = this.#abandonedGone ??= new Set();
    set.add(gone.sequence);
    if (set.size > MAX_ABANDONED_GONE) set.delete(set.values().next().value!);
  }

  /**
   * True when `sequence`'s last arrival, abandoned part-way (reset), was
   * dropped and the sequence has not arrived again since: it was never held
   * whole. Remembered for the last {@linkcode MAX_ABANDONED_GONE} such.
   */
  abandonedGone(sequence: number): boolean {
    return this.#abandonedGone?.has(sequence) ?? false;
  }

  /** The group at arrival index `index`, if still held. */
  at(index: number): CachedGroup | undefined {
    const slot = this.#slot(index);
    return slot instanceof CachedGroup ? slot : undefined;
  }

  /**
   * The sequence of the arrival at `index` while the ring still holds it or
   * its place (a group the byte budget dropped from among later arrivals).
   */
  sequenceAt(index: number): number | undefined {
    return this.#slot(index)?.sequence;
  }

  #slot(index: number): CachedGroup | DroppedGroup | undefined {
    const first = this.#slots[0];
    return first ? this.#slots[index - first.index] : undefined;
  }

  /** Whether the group at arrival index `index` is held and within the burst window. */
  young(index: number): boolean {
    const group = this.at(index);
    return group !== undefined && this.#young(group, this.#clock());
  }

  /**
   * Every arrival so far was handed to the cursors now (their wake after the
   * turn of the writes): the burst window of those not handed over before
   * starts now.
   */
  handedOver(): void {
    const turns = this.#handOvers;
    if (this.#burstMs === 0 || this.#written === (turns[turns.length - 1]?.end ?? 0)) return;
    this.#pruneHandOvers();
    turns.push({ end: this.#written, at: this.#clock() });
  }

  // Forgets the hand-overs of arrivals no longer held.
  #pruneHandOvers(): void {
    const turns = this.#handOvers;
    const oldest = this.oldest;
    while (turns.length > 0 && turns[0]!.end <= oldest) turns.shift();
  }

  /** A held group by sequence (the latest arrival of it: an abandoned one may come again). */
  find(sequence: number): CachedGroup | undefined {
    const slot = this.#slots.findLast((g) => g.sequence === sequence);
    return slot instanceof CachedGroup ? slot : undefined;
  }

  /**
   * The held group with the lowest sequence above `sequence` (`above`), and
   * whether any held group is below it (`below`).
   */
  around(sequence: number): { above: CachedGroup | undefined; below: boolean } {
    let above: CachedGroup | undefined;
    let below = false;
    for (const g of this.#slots) {
      if (!(g instanceof CachedGroup)) continue;
      if (g.sequence < sequence) below = true;
      else if (g.sequence > sequence && (!above || g.sequence < above.sequence)) above = g;
    }
    return { above, below };
  }

  /** The held groups from sequence `floor` on, in sequence order. */
  from(floor: number): CachedGroup[] {
    const groups = this.#slots.filter((g): g is CachedGroup =>
      g instanceof CachedGroup && g.sequence >= floor
    );
    groups.sort((a, b) => a.sequence - b.sequence);
    return groups;
  }

  // Not handed to the cursors yet, or less than burstMs ago (never young, with burstMs 0).
  // Measured from the hand-over, not the write: a turn that lasts longer than the window (a
  // backlog of upstream groups taken in one go, a process descheduled mid-turn on a loaded
  // host) would otherwise evict, or let a cursor skip, groups no cursor could have read yet.
  #young(group: CachedGroup, now: number): boolean {
    if (this.#burstMs === 0) return false;
    this.#pruneHandOvers();
    const turn = this.#handOvers.find((t) => group.index < t.end);
    return turn === undefined || now - turn.at < this.#burstMs;
  }
}

/** Where a group the byte budget dropped from among later arrivals was. */
export interface DroppedGroup {
  /** Its arrival index. */
  readonly index: number;
  /** Its sequence. */
  readonly sequence: number;
  /** When it arrived (as {@linkcode CachedGroup.writtenAt}). */
  readonly writtenAt: number;
}

/**
 * The payload bytes a ring holds against its budget. A group still arriving
 * grows, so open groups are summed afresh each time; complete ones once, and
 * what was counted is what is taken off (a redaction may shrink a group later).
 */
class RingBytes {
  readonly #max: number;
  #complete = 0;
  readonly #open = new Set<CachedGroup>();
  // Held complete groups (the ring's own bound bounds them) and the bytes counted for each.
  readonly #counted = new Map<CachedGroup, number>();

  constructor(max: number) {
    this.#max = max;
  }

  get total(): number {
    let total = this.#complete;
    for (const g of this.#open) total += g.cost;
    return total;
  }

  added(group: CachedGroup): void {
    this.#settle();
    if (group.complete) this.#count(group);
    else this.#open.add(group);
  }

  removed(group: CachedGroup): void {
    if (this.#open.delete(group)) return;
    this.#complete -= this.#counted.get(group) ?? 0;
    this.#counted.delete(group);
  }

  #count(group: CachedGroup): void {
    const cost = group.cost;
    this.#complete += cost;
    this.#counted.set(group, cost);
  }

  over(): boolean {
    return this.total > this.#max;
  }

  // Open groups that finished since count as complete from now on.
  #settle(): void {
    for (const g of this.#open) {
      if (g.complete) {
        this.#open.delete(g);
        this.#count(g);
      }
    }
  }
}
