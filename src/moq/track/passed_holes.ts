import type { CachedGroup } from "./cached_group.ts";
import type { GroupRing } from "./group_ring.ts";
import { type GapFetch, GapReader } from "./gap_reader.ts";
import type { Timers } from "../../timers/mod.ts";

/** How a {@linkcode PassedHoles} reads back late groups the ring dropped (a cursor's flow). */
export interface HoleReads {
  /** Reads a group; undefined: they cannot be read back, and are skipped. */
  readonly fetch: GapFetch | undefined;
  /** Clock, ms. */
  readonly clock: () => number;
  /** A read waiting longer than this many ms is given up (skipped). */
  readonly lagMs: number;
  /** Timers of the reads' retries (default the system's). */
  readonly timers?: Timers;
}

/** Most sequences a {@linkcode PassedHoles} remembers; older ones are forgotten first. */
export const MAX_PASSED_HOLES = 1024;

/**
 * The sequences a flow-controlled cursor went on without (missing among the
 * held groups for too long), so that one arriving late is still delivered:
 * it watches the ring's arrivals from the first hole on. A late group the
 * ring dropped before the cursor took it (many arrived at once: a funnel
 * learning a run of another funnel's records, a relay repairing a long gap)
 * is not lost with it: it is read back ({@linkcode readBack}). Bounded: past {@linkcode MAX_PASSED_HOLES} the oldest
 * holes are forgotten.
 */
export class PassedHoles {
  // Made at the first hole, as is #dropped: most cursors never pass one, and every subscriber's
  // cursor holds these for its whole life.
  #holes: Set<number> | undefined;
  // Holes whose late group arrived and was dropped before it was taken: to be read back, and
  // those being read back, since when.
  #dropped: number[] | undefined;
  #reader: GapReader | undefined;
  #readSince = 0;
  // Arrival index from which arrivals have not been checked yet.
  #scan = -1;

  /** Remembers `[from, to)` as passed over; arrivals from index `next` on may fill them. */
  passed(from: number, to: number, next: number): void {
    const holes = this.#holes ??= new Set();
    this.#scan = holes.size === 0 ? next : Math.min(this.#scan, next);
    for (let s = from; s < to; s++) holes.add(s);
    while (holes.size > MAX_PASSED_HOLES) holes.delete(holes.values().next().value!);
  }

  /**
   * A group that arrived late for a remembered hole, if one did and is still
   * held. `written` says whether the producer took a sequence: a hole taken
   * among arrivals the ring dropped before they were checked goes to
   * {@linkcode readBack}, as does one dropped from among later arrivals.
   */
  late(ring: GroupRing, written: (sequence: number) => boolean): CachedGroup | undefined {
    const holes = this.#holes;
    if (holes === undefined || holes.size === 0) return undefined;
    if (this.#scan < ring.oldest) {
      // Arrivals gone unchecked: which holes they filled is known only from what was written.
      for (const s of holes) {
        if (written(s) && !ring.find(s)) this.#drop(s);
      }
      this.#scan = ring.oldest;
    }
    while (this.#scan < ring.written) {
      const index = this.#scan++;
      const sequence = ring.sequenceAt(index);
      if (sequence === undefined || !holes.has(sequence)) continue;
      const group = ring.at(index);
      // An arrival abandoned mid-way is no answer: it may come again whole.
      if (group?.live?.state === "reset") continue;
      if (group) {
        holes.delete(sequence);
        return group;
      }
      this.#drop(sequence); // its place only: dropped for the byte budget
    }
    return undefined;
  }

  #drop(sequence: number): void {
    this.#holes?.delete(sequence);
    (this.#dropped ??= []).push(sequence);
  }

  /** The holes whose late group the ring dropped before it was taken, lowest first; forgotten here. */
  takeDropped(): number[] {
    const dropped = this.#dropped;
    if (dropped === undefined) return [];
    this.#dropped = undefined;
    return dropped.sort((a, b) => a - b);
  }

  /** True while late groups the ring dropped are being read back (`wake` is called as they come). */
  get reading(): boolean {
    return this.#reader !== undefined;
  }

  /**
   * A late group the ring dropped before it was taken, read back; undefined
   * while none is ready (`wake` is called when one is). One that cannot be
   * read back (no `fetch`, not there, or not read within `lagMs`) is given
   * up: `skip` is told how many.
   */
  readBack(
    reads: HoleReads,
    wake: () => void,
    skip: (count: number) => void,
  ): CachedGroup | undefined {
    for (;;) {
      const reader = this.#reader;
      if (!reader) {
        if (this.#dropped === undefined) return undefined; // nothing to read back
        const sequences = this.takeDropped();
        if (sequences.length === 0) return undefined;
        if (!reads.fetch) {
          skip(sequences.length);
          return undefined;
        }
        this.#readSince = reads.clock();
        this.#reader = GapReader.of(sequences, this.#readSince, reads.fetch, wake, reads.timers);
        continue;
      }
      if (reads.clock() - this.#readSince > reads.lagMs) {
        skip(reader.remaining);
        this.#endReads();
        continue;
      }
      const read = reader.take();
      if (read === "reading") return undefined;
      if (reader.remaining === 0) this.#endReads();
      if (typeof read === "object") return read;
      skip(1); // written, yet not there to read
    }
  }

  #endReads(): void {
    this.#reader?.close();
    this.#reader = undefined;
  }

  /** Forgets every hole and stops its reads (the cursor skipped ahead of them all, or closed). */
  clear(): void {
    this.#holes = undefined;
    this.#dropped = undefined;
    this.#endReads();
  }
}
