import { CachedGroup, type GroupFrames } from "./cached_group.ts";

/** Most groups a producer keeps beyond its cache size for a burst (`burstMs`). */
export const MAX_BURST_GROUPS = 256;

/**
 * A track's recent groups in arrival order, each numbered by its arrival
 * index. Cursors follow it by index, so a late group is simply the next
 * arrival for every cursor that has not passed it. It holds `size` groups,
 * and up to {@linkcode MAX_BURST_GROUPS} more while the oldest is younger
 * than `burstMs`.
 */
export class GroupRing {
  readonly #groups: CachedGroup[] = [];
  readonly #size: number;
  readonly #burstMs: number;
  readonly #clock: () => number;
  #written = 0;

  /** An empty ring of `size` groups (at least 1). */
  constructor(size: number, burstMs: number, clock: () => number) {
    this.#size = Math.max(1, size);
    this.#burstMs = Math.max(0, burstMs);
    this.#clock = clock;
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
    while (
      groups.length > this.#size &&
      (!this.#young(groups[0]!, now) || groups.length > this.#size + MAX_BURST_GROUPS)
    ) groups.shift();
    return group;
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
