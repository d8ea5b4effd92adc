import { MAX_TIMESTAMP, type TrackInfo } from "../codec/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { SequenceWindow } from "../sequence_window.ts";
import { CachedGroup, type GroupFrames } from "./cached_group.ts";
import { GroupRing } from "./group_ring.ts";
import type { LiveFrames } from "./live_frames.ts";
import { BelowStartLog } from "./below_start_log.ts";
import { ChangeNotifier } from "./change_notifier.ts";
import {
  type CursorFlow,
  type CursorSource,
  TrackCursor,
  type TrackObserver,
} from "./track_cursor.ts";

/** Options for {@linkcode TrackProducer}. */
export interface TrackProducerOptions {
  /** How many recent groups to keep for new subscribers and FETCH (default 32). */
  readonly cache?: number;
  /**
   * Drop cached groups written longer ago than this many ms (default 0: no
   * age limit). The group being written and the newest complete one stay.
   */
  readonly cacheMs?: number;
  /** Payload bytes the cache holds at most (default: no limit; the newest group may go over). */
  readonly cacheBytes?: number;
  /** Publisher priority 0..255 (default 0). */
  readonly priority?: number;
  /** Whether groups should be delivered in order (default false). */
  readonly ordered?: boolean;
  /** Retention of non-latest groups in ms, advertised in TRACK_INFO (default 5000). */
  readonly maxLatency?: number;
  /** Timestamp units per second (default 1000). */
  readonly timescale?: number;
  /** Clock for default group timestamps and {@linkcode CachedGroup.writtenAt}, in ms (default Date.now). */
  readonly clock?: () => number;
  /** Timers of the cursors' waits: a lagging reader's wake-up, a read-back's retry (default the system's). */
  readonly timers?: Timers;
  /** Told of what the track's cursors do (deliveries, skips, subscribers coming and going). */
  readonly observer?: TrackObserver;
  /**
   * Where {@linkcode TrackProducer.fetch} finds a group the cache no longer
   * (or never) held: the funnel's ledger, a relay's upstream session.
   */
  readonly fetchMissing?: GroupFetcher;
  /**
   * Deliver groups that arrive together as a burst (default 0: off). Waiting
   * cursors are woken once the event-loop turn of a write is over, so they
   * take every group written in that turn at once (a QUIC connection then
   * packs them into far fewer packets), and a group not yet handed to them
   * by that wake, or handed over less than this many ms ago, is neither
   * dropped from the cache for its size nor skipped by a cursor for its
   * queue bound (at most {@linkcode MAX_BURST_GROUPS} more are kept). The
   * window starts at the wake, not the write: a turn longer than the window
   * (a backlog taken in one go, a process descheduled mid-turn) leaves every
   * cursor its chance at the turn's groups. A relay, whose groups arrive one
   * by one from its upstream, sets it.
   */
  readonly burstMs?: number;
  /**
   * Flow control for a track whose every group is wanted, such as a ledger's
   * records (default 0: off). No cursor is skipped for the length of its
   * queue: one that falls behind the cache reads the groups it missed
   * through `fetchMissing`, in order, and skips ahead (counted, as any skip)
   * only once the next group it has to deliver was written more than this
   * many ms ago, that is when it is slower than the track. Groups must be
   * written in sequence order.
   */
  readonly lagMs?: number;
}

/** A group read from elsewhere than the producer's cache. */
export interface FetchedGroup {
  /** The group's frames, or those of a group still arriving (passed on as they come). */
  readonly frames: Uint8Array | readonly Uint8Array[] | LiveFrames;
  /** Its timestamp in the track timescale (exact as a bigint). */
  readonly timestamp: number | bigint;
}

/**
 * Reads group `sequence` from elsewhere; undefined when it is not there.
 * `signal` aborts when the requester went away.
 */
export type GroupFetcher = (
  sequence: number,
  signal: AbortSignal,
) => Promise<FetchedGroup | undefined>;

/** What {@linkcode TrackProducer.holds} says of a sequence. */
export type GroupPresence = "written" | "missing" | "too old";

/** Options for {@linkcode TrackProducer.writeGroup}. */
export interface WriteGroupOptions {
  /**
   * The group's timestamp in the track timescale (default: clock converted
   * to the timescale); a bigint keeps it exact above 2^53. At most
   * 2^61 - 1 (the first frame's zigzag delta must fit a varint).
   */
  readonly timestamp?: number | bigint;
  /**
   * The payload size of frames given as a function, counted against
   * `cacheBytes` until they are made (default: they are made at once to be
   * measured, when the track has a byte budget).
   */
  readonly size?: number;
}

/**
 * The source of one track: the application writes groups with explicit
 * sequences, and every session serving the track reads them through its own
 * cursor. Writing never waits for subscribers; slow ones skip ahead.
 *
 * Groups may be written out of sequence order: a relay receives each group on
 * its own stream, so a retransmitted group can arrive after newer ones. A late
 * group is taken (once: a sequence already seen is refused) and reaches every
 * cursor that has not skipped past it; new subscribers get the cached groups
 * in sequence order. A cursor that falls behind skips by sequence, never by
 * arrival (see {@linkcode TrackCursor}), so a late group cannot throw it back.
 *
 * @example
 * ```ts
 * const track = new TrackProducer();
 * track.writeGroup(1, new TextEncoder().encode("hello"));
 * ```
 */
export class TrackProducer {
  /** The properties advertised to subscribers (TRACK_INFO / SUBSCRIBE_OK). */
  readonly info: TrackInfo;
  readonly #clock: () => number;
  readonly #observer: TrackObserver | undefined;
  readonly #fetchMissing: GroupFetcher | undefined;
  readonly #ring: GroupRing;
  readonly #belowStart = new BelowStartLog();
  readonly #changes: ChangeNotifier;
  readonly #source: CursorSource;
  readonly #seen = new SequenceWindow();
  #closed = false;
  #cursors = 0;
  #stale = 0;
  #late = 0;
  #first = -1;

  /** Makes an empty, open track. */
  constructor(options: TrackProducerOptions = {}) {
    this.info = trackInfo(options);
    this.#clock = options.clock ?? Date.now;
    this.#observer = options.observer;
    this.#fetchMissing = options.fetchMissing;
    const burstMs = Math.max(0, options.burstMs ?? 0);
    this.#ring = new GroupRing(options.cache ?? 32, burstMs, this.#clock, {
      maxAgeMs: options.cacheMs ?? 0,
      maxBytes: options.cacheBytes ?? Infinity,
    });
    // The burst window of the groups a wake hands to the cursors starts at that wake.
    this.#changes = new ChangeNotifier(
      burstMs > 0,
      burstMs > 0 ? () => this.#ring.handedOver() : undefined,
    );
    const lagMs = options.lagMs ?? 0;
    const flow: CursorFlow | undefined = lagMs > 0
      ? {
        lagMs,
        clock: this.#clock,
        timers: options.timers ?? systemTimers,
        fetch: this.#fetchMissing ? this.#readBack : undefined,
      }
      : undefined;
    this.#source = {
      ring: this.#ring,
      belowStart: this.#belowStart,
      changes: this.#changes,
      observer: this.#observer,
      closed: () => this.#closed,
      latest: () => this.#seen.highest,
      first: () => this.#first,
      written: (sequence) => this.#seen.check(sequence) === "seen",
      flow,
    };
  }

  /** Sequence of the highest group written, or undefined before the first. */
  get latest(): number | undefined {
    const highest = this.#seen.highest;
    return highest < 0 ? undefined : highest;
  }

  /** True after {@linkcode close}. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Number of live subscriber cursors (sessions currently serving this track). */
  get subscribers(): number {
    return this.#cursors;
  }

  /** Groups held now for new subscribers and FETCH. */
  get cached(): number {
    return this.#ring.length;
  }

  /** Payload bytes held now (counted only when `cacheBytes` is set; else 0). */
  get cachedBytes(): number {
    return this.#ring.bytes;
  }

  /** Writes refused because their sequence was already written (or is too old to tell). */
  get staleWrites(): number {
    return this.#stale;
  }

  /** Groups taken although a higher sequence was written before them. */
  get lateWrites(): number {
    return this.#late;
  }

  /**
   * Adds a group. A sequence already written is refused (returns false), so
   * a duplicate never reaches subscribers twice; so is one more than 4096
   * below the highest, which is too old to tell. A sequence below the
   * highest is a late group: it is taken and reaches every cursor that has
   * not skipped past it. Frames given as a function are made when a
   * subscriber first reads the group, so groups nobody reads cost no encoding.
   */
  writeGroup(
    sequence: number,
    frames: GroupFrames,
    options: WriteGroupOptions = {},
  ): boolean {
    if (this.#closed) throw new TypeError("Cannot write a group: the track is closed");
    if (!Number.isSafeInteger(sequence) || sequence < 0) {
      throw new RangeError(`Cannot write group "${sequence}": not a non-negative safe integer`);
    }
    // Checked before anything changes, so a refused write leaves its sequence free.
    const given = options.timestamp === undefined ? undefined : checkedTimestamp(options.timestamp);
    const late = sequence < this.#seen.highest;
    // A group abandoned mid-way (reset) may come again whole, from another upstream.
    if (!this.#seen.add(sequence) && !this.#abandoned(sequence)) {
      this.#stale++;
      return false;
    }
    if (late) this.#late++;
    if (this.#first < 0) this.#first = sequence;
    const now = this.#clock();
    const timestamp = given ?? BigInt(Math.max(0, Math.round(now * this.info.timescale / 1000)));
    this.#belowStart.wrote(this.#ring.append(sequence, frames, timestamp, now, options.size));
    this.#changes.written();
    return true;
  }

  /**
   * Tells the observer that `bytes` payload bytes of `group` went to a
   * subscriber (the sessions serving the track call it as they send).
   */
  sent(group: CachedGroup, bytes: number): void {
    if (bytes > 0) this.#observer?.sent?.(group, bytes);
  }

  /**
   * Whether group `sequence` was written: "written", "missing", or "too old"
   * when it is below {@linkcode lateFloor} (the producer no longer tells a
   * new group there from one it had, and refuses to write it). A group
   * abandoned part-way (reset) and not written again since is "missing": it
   * may be written again whole.
   */
  holds(sequence: number): GroupPresence {
    const seen = this.#seen.check(sequence);
    if (seen === "seen") return this.#abandoned(sequence) ? "missing" : "written";
    return seen === "new" ? "missing" : "too old";
  }

  // Whether the cache's latest arrival of `sequence` is a group abandoned part-way, or was when
  // the cache dropped it (a group still missing whole once its partial arrival left the cache).
  #abandoned(sequence: number): boolean {
    const held = this.#ring.find(sequence);
    return held ? held.live?.state === "reset" : this.#ring.abandonedGone(sequence);
  }

  /** The lowest sequence a late group may have and still be written (0 before the first group). */
  get lateFloor(): number {
    return this.#seen.floor;
  }

  /** A cached group by sequence (for FETCH), if still held. */
  group(sequence: number): CachedGroup | undefined {
    return this.#ring.find(sequence);
  }

  /**
   * The group a FETCH asks for: from the cache, else from `fetchMissing`
   * (when the producer has one); undefined when neither has it. A group its
   * publisher abandoned part-way (reset) is not held: the cache keeps it
   * only for the subscribers already reading it, and a FETCH of it goes to
   * `fetchMissing` (a relay's upstream, whose publisher may have it whole).
   * A group fetched from elsewhere is not added to the cache or sent to
   * subscribers; it counts as written at `writtenAt` (default 0). Rejects
   * only if `fetchMissing` does.
   */
  async fetch(
    sequence: number,
    signal: AbortSignal = NEVER,
    writtenAt = 0,
  ): Promise<CachedGroup | undefined> {
    let cached = this.group(sequence);
    if (cached?.live?.state === "reset") cached = undefined;
    if (cached || !this.#fetchMissing || !Number.isSafeInteger(sequence) || sequence < 0) {
      return cached;
    }
    const found = await this.#fetchMissing(sequence, signal);
    if (!found) return undefined;
    return new CachedGroup(
      sequence,
      found.frames,
      checkedTimestamp(found.timestamp),
      -1,
      writtenAt,
    );
  }

  // A flow-controlled cursor's read of a group it fell behind on. One this producer wrote is
  // there to be read (a relay's upstream FETCH answers "not there" when it failed too): its
  // absence is a failed read, tried again until the cursor is slower than the track.
  readonly #readBack = async (
    sequence: number,
    signal: AbortSignal,
    writtenAt: number,
  ): Promise<CachedGroup | undefined> => {
    const group = await this.fetch(sequence, signal, writtenAt);
    if (!group && !signal.aborted && this.holds(sequence) === "written") {
      throw new Error(`Cannot read back group "${sequence}": not found where it was written`);
    }
    return group;
  };

  /** Ends the track: subscribers finish after what they already have. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#changes.wake();
  }

  /**
   * A reader of the groups from sequence `start` on: the cached ones in
   * sequence order, then every group written later, in arrival order. With
   * no `start` it begins at the latest group (or the first group to come).
   * Groups below its start never reach it, even when they arrive late, and
   * are not counted as skipped. A reader more than `queueLimit` groups behind
   * skips ahead (see {@linkcode TrackCursor}), unless the track is flow
   * controlled (`lagMs`).
   */
  cursor(start?: number, queueLimit = 16): TrackCursor {
    const floor = start ?? this.latest ?? 0;
    // With no start the floor is the latest sequence, so this holds at most that one group.
    const backlog = this.#ring.from(floor);
    this.#belowStart.opened(floor);
    this.#cursors++;
    this.#observer?.attached?.();
    return new TrackCursor(this.#source, {
      floor,
      backlog,
      index: this.#ring.written,
      limit: Math.max(1, queueLimit),
      fromFirst: start === undefined && this.latest === undefined,
      release: () => {
        if (--this.#cursors === 0) this.#belowStart.clear(this.#ring.written);
        this.#observer?.detached?.();
      },
    });
  }
}

const NEVER = new AbortController().signal;

function trackInfo(options: TrackProducerOptions): TrackInfo {
  const info = {
    priority: options.priority ?? 0,
    ordered: options.ordered ?? false,
    maxLatency: options.maxLatency ?? 5000,
    timescale: options.timescale ?? 1000,
  };
  if (!Number.isInteger(info.priority) || info.priority < 0 || info.priority > 255) {
    throw new RangeError(`Cannot use priority "${info.priority}": outside 0..255`);
  }
  if (!(info.timescale > 0)) {
    throw new RangeError(`Cannot use timescale "${info.timescale}": must be positive`);
  }
  return info;
}

function checkedTimestamp(value: number | bigint): bigint {
  const ts = typeof value === "bigint" ? value : Number.isSafeInteger(value) ? BigInt(value) : -1n;
  if (ts < 0n || ts > MAX_TIMESTAMP) {
    throw new RangeError(`Cannot use timestamp "${value}": not an integer from 0 to 2^61-1`);
  }
  return ts;
}
