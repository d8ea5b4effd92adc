import { MAX_TIMESTAMP, type TrackInfo } from "./codec/mod.ts";
import { CachedGroup, type GroupFrames } from "./cached_group.ts";
import { SequenceWindow } from "./sequence_window.ts";
import { afterTurn } from "../timers/mod.ts";

/** Options for {@linkcode TrackProducer}. */
export interface TrackProducerOptions {
  /** How many recent groups to keep for new subscribers and FETCH (default 32). */
  readonly cache?: number;
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
   * packs them into far fewer packets), and a group younger than this many
   * ms is neither dropped from the cache for its size nor skipped by a
   * cursor for its queue bound (at most {@linkcode MAX_BURST_GROUPS} more
   * are kept). A relay, whose groups arrive one by one from its upstream,
   * sets it.
   */
  readonly burstMs?: number;
}

/** Most groups a producer keeps beyond its cache size for {@linkcode TrackProducerOptions.burstMs}. */
export const MAX_BURST_GROUPS = 256;

/** A group read from elsewhere than the producer's cache. */
export interface FetchedGroup {
  /** The group's frames. */
  readonly frames: Uint8Array | readonly Uint8Array[];
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

/** What a producer tells its observer about its cursors (the relay counts with it). */
export interface TrackObserver {
  /** A cursor was opened (a subscriber started reading). */
  attached?(): void;
  /** A cursor was closed. */
  detached?(): void;
  /** A cursor handed `group` to its subscriber. */
  delivered?(group: CachedGroup): void;
  /**
   * A cursor withheld `count` groups from its subscriber: `forward` when it
   * skipped forward because the subscriber fell behind, false for a late
   * group that arrived below the point it had skipped to.
   */
  skipped?(count: number, forward: boolean): void;
}

/** Options for {@linkcode TrackProducer.writeGroup}. */
export interface WriteGroupOptions {
  /**
   * The group's timestamp in the track timescale (default: clock converted
   * to the timescale); a bigint keeps it exact above 2^53. At most
   * 2^61 - 1 (the first frame's zigzag delta must fit a varint).
   */
  readonly timestamp?: number | bigint;
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
  readonly #cacheSize: number;
  readonly #clock: () => number;
  readonly #observer: TrackObserver | undefined;
  readonly #fetchMissing: GroupFetcher | undefined;
  readonly #burstMs: number;
  #wakePending = false;
  // The cache in arrival order: cursors follow it by index, so a late group is
  // simply the next arrival for every cursor that has not passed it.
  readonly #ring: CachedGroup[] = [];
  readonly #seen = new SequenceWindow();
  #written = 0;
  #closed = false;
  // Armed only while someone waits, so a write nobody awaits allocates nothing.
  #changed: Promise<void> | undefined;
  #notify: (() => void) | undefined;
  #cursors = 0;
  readonly #waiters = new Set<() => void>();
  #stale = 0;
  #late = 0;
  // Writes below some open cursor's start (sequence < #maxFloor when written),
  // by arrival index: a cursor that fell out of the ring must not count
  // evicted groups it never asked for, and their sequences went with them.
  // Complete from arrival #lowFrom on; cleared when the last cursor closes.
  // Small in the common case: a cursor starts at or below the latest, so
  // only late groups land here.
  #maxFloor = -1;
  #lowFrom = 0;
  readonly #lowIndex: number[] = [];
  readonly #lowSequence: number[] = [];

  /** Makes an empty, open track. */
  constructor(options: TrackProducerOptions = {}) {
    this.info = {
      priority: options.priority ?? 0,
      ordered: options.ordered ?? false,
      maxLatency: options.maxLatency ?? 5000,
      timescale: options.timescale ?? 1000,
    };
    if (
      !Number.isInteger(this.info.priority) || this.info.priority < 0 || this.info.priority > 255
    ) {
      throw new RangeError(`Cannot use priority "${this.info.priority}": outside 0..255`);
    }
    if (!(this.info.timescale > 0)) {
      throw new RangeError(`Cannot use timescale "${this.info.timescale}": must be positive`);
    }
    this.#cacheSize = Math.max(1, options.cache ?? 32);
    this.#clock = options.clock ?? Date.now;
    this.#observer = options.observer;
    this.#fetchMissing = options.fetchMissing;
    this.#burstMs = Math.max(0, options.burstMs ?? 0);
  }

  // Written less than burstMs ago (never, with burstMs 0).
  #young(group: CachedGroup, now = this.#clock()): boolean {
    return now - group.writtenAt < this.#burstMs;
  }

  // With burstMs, one wake after the turn for all of its writes; a close wakes at once.
  #signal(): void {
    if (this.#burstMs === 0 || this.#closed) return this.#wake();
    if (this.#wakePending) return;
    this.#wakePending = true;
    afterTurn(this.#wakeAfterTurn);
  }

  readonly #wakeAfterTurn = (): void => {
    this.#wakePending = false;
    this.#wake();
  };

  #wake(): void {
    const notify = this.#notify;
    this.#changed = undefined;
    this.#notify = undefined;
    notify?.();
    if (this.#waiters.size === 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  /** Resolves at the next write or close, or when `signal` aborts (no leftover listeners). */
  #waitChange(signal?: AbortSignal): Promise<void> {
    if (!signal) {
      return this.#changed ??= new Promise((resolve) => {
        this.#notify = resolve;
      });
    }
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = (): void => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
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
    if (!this.#seen.add(sequence)) {
      this.#stale++;
      return false;
    }
    if (late) this.#late++;
    const now = this.#clock();
    const timestamp = given ?? BigInt(Math.max(0, Math.round(now * this.info.timescale / 1000)));
    const group = new CachedGroup(sequence, frames, timestamp, this.#written++, now);
    if (sequence < this.#maxFloor) this.#logLow(group);
    this.#ring.push(group);
    while (
      this.#ring.length > this.#cacheSize &&
      (!this.#young(this.#ring[0]!, now) || this.#ring.length > this.#cacheSize + MAX_BURST_GROUPS)
    ) this.#ring.shift();
    this.#signal();
    return true;
  }

  #logLow(group: CachedGroup): void {
    this.#lowIndex.push(group.index);
    this.#lowSequence.push(group.sequence);
    if (this.#lowIndex.length <= 2 * LOW_LOG_SIZE) return;
    // Amortised: drop the older half at once. A cursor still behind what
    // was dropped counts those evicted groups as skipped (it cannot tell).
    this.#lowFrom = this.#lowIndex[LOW_LOG_SIZE - 1]! + 1;
    this.#lowIndex.splice(0, LOW_LOG_SIZE);
    this.#lowSequence.splice(0, LOW_LOG_SIZE);
  }

  // Nobody reads: nothing logged so far concerns any cursor.
  #forgetLow(): void {
    this.#maxFloor = -1;
    this.#lowFrom = this.#written;
    this.#lowIndex.length = 0;
    this.#lowSequence.length = 0;
  }

  // Of the arrivals [from, to) (evicted ones), how many are below `floor`, as far as the log knows.
  #evictedBelow(from: number, to: number, floor: number): number {
    let n = 0;
    for (let i = 0; i < this.#lowIndex.length; i++) {
      const index = this.#lowIndex[i]!;
      if (index >= to) break;
      if (index >= from && this.#lowSequence[i]! < floor) n++;
    }
    return n;
  }

  /** True when group `sequence` was written, or is too far below the highest to tell. */
  has(sequence: number): boolean {
    return this.#seen.check(sequence) !== "new";
  }

  /** A cached group by sequence (for FETCH), if still held. */
  group(sequence: number): CachedGroup | undefined {
    return this.#ring.find((g) => g.sequence === sequence);
  }

  /**
   * The group a FETCH asks for: from the cache, else from `fetchMissing`
   * (when the producer has one); undefined when neither has it. A group
   * fetched from elsewhere is not added to the cache or sent to subscribers.
   * Rejects only if `fetchMissing` does.
   */
  async fetch(sequence: number, signal: AbortSignal = NEVER): Promise<CachedGroup | undefined> {
    const cached = this.group(sequence);
    if (cached || !this.#fetchMissing || !Number.isSafeInteger(sequence) || sequence < 0) {
      return cached;
    }
    const found = await this.#fetchMissing(sequence, signal);
    if (!found) return undefined;
    return new CachedGroup(sequence, found.frames, checkedTimestamp(found.timestamp), -1);
  }

  /** Ends the track: subscribers finish after what they already have. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signal();
  }

  /**
   * A reader of the groups from sequence `start` on: the cached ones in
   * sequence order, then every group written later, in arrival order. With
   * no `start` it begins at the latest group (or the first group to come).
   * Groups below its start never reach it, even when they arrive late, and
   * are not counted as skipped. A reader more than `queueLimit` groups behind
   * skips ahead (see {@linkcode TrackCursor}).
   */
  cursor(start?: number, queueLimit = 16): TrackCursor {
    const latest = this.latest;
    const floor = start ?? latest ?? 0;
    // With no start the floor is the latest sequence, so this holds at most that one group.
    const backlog = this.#ring.filter((g) => g.sequence >= floor);
    backlog.sort((a, b) => a.sequence - b.sequence);
    this.#maxFloor = Math.max(this.#maxFloor, floor);
    this.#cursors++;
    this.#observer?.attached?.();
    return new TrackCursor(this, {
      floor,
      backlog,
      index: this.#written,
      limit: Math.max(1, queueLimit),
      release: () => {
        if (--this.#cursors === 0) this.#forgetLow();
        this.#observer?.detached?.();
      },
    });
  }

  // The cached group at arrival index `index`, if still held.
  #at(index: number): CachedGroup | undefined {
    const first = this.#ring[0];
    return first ? this.#ring[index - first.index] : undefined;
  }

  /** @internal The cursor side of the producer: arrivals by index, and waiting. */
  get _reader(): TrackReader {
    return this.#reader ??= {
      written: () => this.#written,
      oldest: () => this.#ring[0]?.index ?? this.#written,
      at: (index) => this.#at(index),
      waitChange: (signal) => this.#waitChange(signal),
      onChange: (callback) => void this.#waiters.add(callback),
      young: (index) => {
        const group = this.#at(index);
        return group !== undefined && this.#young(group);
      },
      evictedBelow: (from, to, floor) =>
        // Arrivals the log no longer covers are counted as not below: skipped.
        this.#evictedBelow(Math.max(from, this.#lowFrom), to, floor),
      observer: this.#observer,
    };
  }
  #reader: TrackReader | undefined;
}

const NEVER = new AbortController().signal;

// Writes below a cursor's start remembered for cursors that fall out of the
// ring (between this many and twice as many).
const LOW_LOG_SIZE = 1024;

function checkedTimestamp(value: number | bigint): bigint {
  const ts = typeof value === "bigint" ? value : Number.isSafeInteger(value) ? BigInt(value) : -1n;
  if (ts < 0n || ts > MAX_TIMESTAMP) {
    throw new RangeError(`Cannot use timestamp "${value}": not an integer from 0 to 2^61-1`);
  }
  return ts;
}

/** What a cursor needs of its producer (kept off the producer's public surface). */
interface TrackReader {
  written(): number;
  oldest(): number;
  at(index: number): CachedGroup | undefined;
  waitChange(signal?: AbortSignal): Promise<void>;
  onChange(callback: () => void): void;
  /** Whether the group at arrival index `index` is within the burst window. */
  young(index: number): boolean;
  /**
   * How many of the arrivals `from` to `to` (exclusive, evicted from the
   * ring) had a sequence below `floor`, where `floor` is the start of a
   * cursor open since before `from`.
   */
  evictedBelow(from: number, to: number, floor: number): number;
  readonly observer: TrackObserver | undefined;
}

/** Where a new cursor starts. */
interface CursorStart {
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
 * One subscriber's position in a {@linkcode TrackProducer}: the cached groups
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
  readonly #track: TrackProducer;
  readonly #reader: TrackReader;
  readonly #limit: number;
  // The subscriber's start: groups below it are not its business (never counted).
  readonly #floor: number;
  // The lowest sequence it may deliver: its start, raised by each skip to the skip point.
  #min: number;
  #backlog: CachedGroup[];
  #index: number;
  #skipped = 0;
  #release: (() => void) | undefined;

  /** @internal Made by {@linkcode TrackProducer.cursor}. */
  constructor(track: TrackProducer, start: CursorStart) {
    this.#track = track;
    this.#reader = track._reader;
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
    this.#reader.observer?.skipped?.(count, forward);
  }

  /** The next group without waiting, or undefined if none is ready. */
  poll(): CachedGroup | undefined {
    const group = this.#backlog.length > 0 ? this.#backlog.shift() : this.#pollLive();
    if (group) this.#reader.observer?.delivered?.(group);
    return group;
  }

  #pollLive(): CachedGroup | undefined {
    const r = this.#reader;
    for (;;) {
      const written = r.written();
      if (this.#index >= written) return undefined;
      // Behind by more than the queue allows (or past the cache). A burst
      // that has only just arrived is not falling behind.
      if (
        this.#index < r.oldest() ||
        (written - this.#index > this.#limit && !r.young(this.#index))
      ) return this.#skipAhead(written);
      const group = r.at(this.#index++)!;
      if (group.sequence >= this.#min) return group;
      // Below the start: not asked for. Below only the skip point: withheld by the skip.
      if (group.sequence >= this.#floor) this.#skip(1, false);
    }
  }

  // Passes over every unread arrival but the one with the newest sequence,
  // which it returns (undefined when none is at or above the skip point).
  // The one scan of the ring is paid per skip, not per group.
  #skipAhead(written: number): CachedGroup | undefined {
    const r = this.#reader;
    const oldest = r.oldest();
    let passed = 0;
    if (this.#index < oldest) {
      passed = oldest - this.#index - r.evictedBelow(this.#index, oldest, this.#floor);
      this.#index = oldest;
    }
    let target: CachedGroup | undefined;
    for (let i = this.#index; i < written; i++) {
      const group = r.at(i)!;
      if (group.sequence < this.#floor) continue;
      passed++;
      if (group.sequence >= this.#min && (!target || group.sequence > target.sequence)) {
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
      if (this.#track.closed || signal?.aborted) return undefined;
      await this.#reader.waitChange(signal);
    }
  }

  /**
   * Calls `callback` once at the next write or close. The same function
   * registered twice is called once; a callback that is no longer wanted
   * is simply ignored when it fires. Cheaper than {@linkcode next} with a
   * signal for a loop that has its own ways of being woken.
   */
  onChange(callback: () => void): void {
    this.#reader.onChange(callback);
  }

  /** Releases the cursor (idempotent). */
  close(): void {
    this.#release?.();
    this.#release = undefined;
  }
}
