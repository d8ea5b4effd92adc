import type { CachedGroup } from "./cached_group.ts";
import type { GroupRing } from "./group_ring.ts";
import type { BelowStartLog } from "./below_start_log.ts";
import type { ChangeNotifier } from "./change_notifier.ts";

/** What a producer tells its observer about its cursors (the relay counts with it). */
export interface TrackObserver {
  /** A cursor was opened (a subscriber started reading). */
  attached?(): void;
  /** A cursor was closed. */
  detached?(): void;
  /** A cursor handed `group` to its subscriber. */
  delivered?(group: CachedGroup): void;
  /**
   * `bytes` payload bytes of `group` went to a subscriber: on a subscription's
   * stream (frame by frame while the group arrives) or as a datagram, or in a
   * FETCH answer. Told by the sessions serving the track, as they hand the
   * bytes to the transport ({@linkcode TrackProducer.sent}).
   */
  sent?(group: CachedGroup, bytes: number): void;
  /**
   * A cursor withheld `count` groups from its subscriber: `forward` when it
   * skipped forward because the subscriber fell behind, false for a late
   * group that arrived below the point it had skipped to.
   */
  skipped?(count: number, forward: boolean): void;
}

/** What a cursor reads of its producer (one per producer, shared by its cursors). */
export interface CursorSource {
  /** The groups, by arrival. */
  readonly ring: GroupRing;
  /** Writes below an open cursor's start, for counting evicted ones. */
  readonly belowStart: BelowStartLog;
  /** Wakes a waiting cursor. */
  readonly changes: ChangeNotifier;
  /** Told of deliveries and skips. */
  readonly observer: TrackObserver | undefined;
  /** True once the track closed. */
  closed(): boolean;
}

/** Where a new cursor starts. */
export interface CursorStart {
  /** The lowest sequence the subscriber asked for. */
  readonly floor: number;
  /** Cached groups to hand over first, in sequence order. */
  readonly backlog: CachedGroup[];
  /** The arrival index of the first group written after the cursor was made. */
  readonly index: number;
  /** How far behind the cursor may fall before it skips ahead. */
  readonly limit: number;
  /** Runs once when the cursor is closed. */
  readonly release: () => void;
}

/**
 * One subscriber's position in a `TrackProducer`: the cached groups
 * from its start in sequence order, then the groups written later in arrival
 * order, late ones included (a late group below the highest delivered still
 * comes, as long as the cursor has not skipped past it).
 *
 * A cursor falls behind when more groups have arrived for it than its queue
 * limit (and the one it is at is older than the producer's `burstMs`), or
 * when the ring dropped groups it had not read. It then skips to the group
 * with the newest *sequence* among the ring's arrivals it has not read,
 * delivers that one next, and never delivers a sequence below it afterwards
 * (its skip point), even one that arrives later. Arrival order plays no part:
 * a retransmitted old group arriving last cannot throw it back.
 *
 * Counting ({@linkcode TrackCursor.skipped} and
 * {@linkcode TrackObserver.skipped}): every group at or above the cursor's
 * start that it will not deliver because of a skip counts once. That is,
 * at the skip, the unread arrivals passed over (one report for all of them,
 * evicted ones included), and afterwards each late group below the skip
 * point (one report each). A group below the cursor's start is never
 * counted: it was not asked for. Hence once drained, delivered plus skipped
 * is exactly the cached groups it started with plus the groups written since
 * at or above its start. (One bound: the producer remembers the sequences of
 * its last 1024 to 2048 writes below an open cursor's start; should older
 * ones be evicted before a cursor read them, they count as skipped.)
 */
export class TrackCursor {
  readonly #source: CursorSource;
  readonly #ring: GroupRing;
  readonly #limit: number;
  // The subscriber's start: groups below it are not its business (never counted).
  readonly #floor: number;
  // The lowest sequence it may deliver: its start, raised by each skip to the skip point.
  #min: number;
  #backlog: CachedGroup[];
  #index: number;
  #skipped = 0;
  #release: (() => void) | undefined;

  /** @internal Made by `TrackProducer.cursor`. */
  constructor(source: CursorSource, start: CursorStart) {
    this.#source = source;
    this.#ring = source.ring;
    this.#floor = start.floor;
    this.#min = start.floor;
    this.#index = start.index;
    this.#limit = start.limit;
    this.#release = start.release;
    this.#backlog = start.backlog;
    // More cached groups than the queue allows: start at the newest sequence
    // (the backlog is sorted by sequence), as a live skip would.
    if (this.#backlog.length > this.#limit) {
      this.#backlog = this.#backlog.slice(-1);
      this.#min = this.#backlog[0]!.sequence;
      this.#skip(start.backlog.length - 1);
    }
  }

  /** Groups at or above its start this reader will not deliver because it fell behind. */
  get skipped(): number {
    return this.#skipped;
  }

  #skip(count: number, forward = true): void {
    this.#skipped += count;
    this.#source.observer?.skipped?.(count, forward);
  }

  /** The next group without waiting, or undefined if none is ready. */
  poll(): CachedGroup | undefined {
    const group = this.#backlog.length > 0 ? this.#backlog.shift() : this.#pollLive();
    if (group) this.#source.observer?.delivered?.(group);
    return group;
  }

  #pollLive(): CachedGroup | undefined {
    const ring = this.#ring;
    for (;;) {
      const written = ring.written;
      if (this.#index >= written) return undefined;
      // Behind by more than the queue allows (or past the cache). A burst
      // that has only just arrived is not falling behind.
      if (
        this.#index < ring.oldest ||
        (written - this.#index > this.#limit && !ring.young(this.#index))
      ) return this.#skipAhead(written);
      const group = ring.at(this.#index);
      // Dropped for the ring's byte budget before this reader took it: it fell behind.
      if (!group) return this.#skipAhead(written);
      this.#index++;
      if (group.sequence >= this.#min) return group;
      // Below the start: not asked for. Below only the skip point: withheld by the skip.
      if (group.sequence >= this.#floor) this.#skip(1, false);
    }
  }

  // Passes over every unread arrival but the one with the newest sequence,
  // which it returns (undefined when none is at or above the skip point).
  // The one scan of the ring is paid per skip, not per group.
  #skipAhead(written: number): CachedGroup | undefined {
    const ring = this.#ring;
    const oldest = ring.oldest;
    let passed = 0;
    if (this.#index < oldest) {
      passed = oldest - this.#index -
        this.#source.belowStart.evictedBelow(this.#index, oldest, this.#floor);
      this.#index = oldest;
    }
    let target: CachedGroup | undefined;
    for (let i = this.#index; i < written; i++) {
      if (ring.sequenceAt(i)! < this.#floor) continue;
      passed++;
      const group = ring.at(i); // undefined where the byte budget dropped it
      if (group && group.sequence >= this.#min && (!target || group.sequence > target.sequence)) {
        target = group;
      }
    }
    this.#index = written;
    if (target) {
      passed--;
      this.#min = target.sequence;
    }
    if (passed > 0) this.#skip(passed);
    return target;
  }

  /** Waits for the next group; undefined when the track closed (or `signal` aborted). */
  async next(signal?: AbortSignal): Promise<CachedGroup | undefined> {
    for (;;) {
      const group = this.poll();
      if (group) return group;
      if (this.#source.closed() || signal?.aborted) return undefined;
      await this.#source.changes.wait(signal);
    }
  }

  /**
   * Calls `callback` once at the next write or close. The same function
   * registered twice is called once; a callback that is no longer wanted
   * is simply ignored when it fires. Cheaper than {@linkcode next} with a
   * signal for a loop that has its own ways of being woken.
   */
  onChange(callback: () => void): void {
    this.#source.changes.onChange(callback);
  }

  /** Releases the cursor (idempotent). */
  close(): void {
    this.#release?.();
    this.#release = undefined;
  }
}
