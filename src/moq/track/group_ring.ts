import { CachedGroup, type GroupFrames } from "./cached_group.ts";

/** Most groups a producer keeps beyond its cache size for a burst (`burstMs`). */
export const MAX_BURST_GROUPS = 256;

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
 * and up to {@linkcode MAX_BURST_GROUPS} more while the oldest is younger
 * than `burstMs`; groups older than `maxAgeMs` go even within the count.
 * Neither count nor age drops a group still being written or the newest
 * complete group (by sequence): a joiner of a media track gets its current
 * GOP from the first frame, and a whole-group reader the last complete one.
 * The byte budget is hard (only the newest arrival may exceed it), as is
 * the count plus {@linkcode MAX_BURST_GROUPS}, so a publisher that leaves
 * groups open cannot make the ring grow without bound. Evictions happen as
 * groups arrive, oldest arrival first.
 */
export class GroupRing {
  readonly #groups: CachedGroup[] = [];
  readonly #size: number;
  readonly #burstMs: number;
  readonly #clock: () => number;
  readonly #maxAgeMs: number;
  readonly #bytes: RingBytes | undefined;
  #written = 0;

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
    return this.#groups[0]?.index ?? this.#written;
  }

  /** Groups held now. */
  get length(): number {
    return this.#groups.length;
  }

  /** Takes a group as the next arrival, evicting the oldest past the ring's size. */
  append(sequence: number, frames: GroupFrames, timestamp: bigint, now: number): CachedGroup {
    const group = new CachedGroup(sequence, frames, timestamp, this.#written++, now);
    const groups = this.#groups;
    groups.push(group);
    this.#bytes?.added(group);
    while (groups.length > 1 && this.#expendable(groups[0]!, now)) {
      const gone = groups.shift()!; // not inside `?.()`: that would skip the shift
      this.#bytes?.removed(gone);
    }
    return group;
  }

  // Whether the oldest arrival goes: over a hard bound, or over count or age and not kept.
  #expendable(oldest: CachedGroup, now: number): boolean {
    const length = this.#groups.length;
    if (length > this.#size + MAX_BURST_GROUPS || this.#bytes?.over()) return true;
    const overCount = length > this.#size && !this.#young(oldest, now);
    const overAge = this.#maxAgeMs > 0 && now - oldest.writtenAt > this.#maxAgeMs;
    return (overCount || overAge) && !this.#kept(oldest);
  }

  // Still being written, or the newest complete group by sequence.
  #kept(group: CachedGroup): boolean {
    if (group.live?.state === "open") return true;
    if (!group.complete) return false;
    const groups = this.#groups;
    for (let i = groups.length - 1; i > 0; i--) {
      const g = groups[i]!;
      if (g.sequence > group.sequence && g.complete) return false;
    }
    return true;
  }

  /** The group at arrival index `index`, if still held. */
  at(index: number): CachedGroup | undefined {
    const first = this.#groups[0];
    return first ? this.#groups[index - first.index] : undefined;
  }

  /** Whether the group at arrival index `index` is held and within the burst window. */
  young(index: number): boolean {
    const group = this.at(index);
    return group !== undefined && this.#young(group, this.#clock());
  }

  /** A held group by sequence (the latest arrival of it: an abandoned one may come again). */
  find(sequence: number): CachedGroup | undefined {
    return this.#groups.findLast((g) => g.sequence === sequence);
  }

  /** The held groups from sequence `floor` on, in sequence order. */
  from(floor: number): CachedGroup[] {
    const groups = this.#groups.filter((g) => g.sequence >= floor);
    groups.sort((a, b) => a.sequence - b.sequence);
    return groups;
  }

  // Written less than burstMs ago (never, with burstMs 0).
  #young(group: CachedGroup, now: number): boolean {
    return now - group.writtenAt < this.#burstMs;
  }
}

/**
 * The payload bytes a ring holds against its budget. A group still arriving
 * grows, so open groups are summed afresh each time; complete ones once.
 */
class RingBytes {
  readonly #max: number;
  #complete = 0;
  readonly #open = new Set<CachedGroup>();

  constructor(max: number) {
    this.#max = max;
  }

  get total(): number {
    let total = this.#complete;
    for (const g of this.#open) total += g.size;
    return total;
  }

  added(group: CachedGroup): void {
    this.#settle();
    if (group.complete) this.#complete += group.size;
    else this.#open.add(group);
  }

  removed(group: CachedGroup): void {
    if (!this.#open.delete(group)) this.#complete -= group.size;
  }

  over(): boolean {
    return this.total > this.#max;
  }

  // Open groups that finished since count as complete from now on.
  #settle(): void {
    for (const g of this.#open) {
      if (g.complete) {
        this.#open.delete(g);
        this.#complete += g.size;
      }
    }
  }
}
