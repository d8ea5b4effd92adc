// What a track cursor reads of its producer, and what it tells it.
import type { CachedGroup } from "./cached_group.ts";
import type { GroupRing } from "./group_ring.ts";
import type { BelowStartLog } from "./below_start_log.ts";
import type { ChangeNotifier } from "./change_notifier.ts";
import type { GapFetch } from "./gap_reader.ts";
import type { Timers } from "../../timers/mod.ts";

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
  /** The highest sequence written, -1 before the first. */
  latest(): number;
  /** The sequence of the first group written, -1 before it. */
  first(): number;
  /** Whether the producer took group `sequence` (it may no longer hold it). */
  written(sequence: number): boolean;
  /** Flow control of a track whose every group is wanted; undefined: skip by queue bound. */
  readonly flow: CursorFlow | undefined;
}

/**
 * How a cursor of a flow-controlled track keeps up (see
 * {@linkcode TrackProducerOptions.lagMs}): it reads what it fell behind the
 * cache on through `fetch`, and skips ahead only once it is slower than the
 * track.
 */
export interface CursorFlow {
  /** A group waiting longer than this many ms for the cursor makes it skip ahead. */
  readonly lagMs: number;
  /** The producer's clock, ms (as {@linkcode CachedGroup.writtenAt}). */
  readonly clock: () => number;
  /** The producer's timers: the cursor's wake-up and its read-backs' retries. */
  readonly timers: Timers;
  /** Reads a group the cache no longer holds; undefined: such groups are skipped. */
  readonly fetch: GapFetch | undefined;
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
  /** Opened at the latest group of a track that had none: it starts at the first one written. */
  readonly fromFirst?: boolean;
}
