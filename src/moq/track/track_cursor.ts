import type { CachedGroup } from "./cached_group.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { GroupRing } from "./group_ring.ts";
import { type GapFetch, GapReader } from "./gap_reader.ts";
import { PassedHoles } from "./passed_holes.ts";
import type { CursorFlow, CursorSource, CursorStart } from "./cursor_source.ts";

export type { CursorFlow, CursorSource, CursorStart, TrackObserver } from "./cursor_source.ts";

/**
 * How long a flow-controlled cursor waits for a group missing among those
 * held (reordered or being repaired) before it reads it back, or goes on
 * without it when there is nowhere to read it from or it is not there.
 */
export const HOLE_WAIT_MS = 200;

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
  // Flow control only: the highest sequence delivered or passed over, the groups being read
  // back because the cache dropped them first, and since when they have been waiting at least.
  #passed: number;
  #gap: GapReader | undefined;
  #gapSince = 0;
  readonly #openedAt: number;
  #waiter: (() => void) | undefined;
  #fromFirst: boolean;
  #timer: unknown;
  readonly #holes = new PassedHoles();

  /** @internal Made by `TrackProducer.cursor`. */
  constructor(source: CursorSource, start: CursorStart) {
    this.#source = source;
    this.#ring = source.ring;
    this.#floor = start.floor;
    this.#min = start.floor;
    this.#index = start.index;
    this.#limit = start.limit;
    this.#release = start.release;
    // With flow control the cursor reads every sequence from its start, from the cache or
    // read back, so a start older than the cache gets what the cache dropped too.
    this.#backlog = source.flow ? [] : start.backlog;
    this.#passed = start.floor - 1;
    this.#fromFirst = start.fromFirst ?? false;
    this.#openedAt = source.flow?.clock() ?? 0;
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

  readonly #skipLate = (count: number): void => this.#skip(count, false);

  /** The next group without waiting, or undefined if none is ready. */
  poll(): CachedGroup | undefined {
    const group = this.#backlog.length > 0
      ? this.#backlog.shift()
      : this.#source.flow
      ? this.#pollFlow(this.#source.flow)
      : this.#pollLive();
    if (group) {
      if (group.sequence > this.#passed) this.#passed = group.sequence;
      this.#source.observer?.delivered?.(group);
    }
    return group;
  }

  /** True when the track is flow controlled: every group is wanted (see {@linkcode abandoned}). */
  get flowControlled(): boolean {
    return this.#source.flow !== undefined;
  }

  /**
   * Group `sequence`, delivered by this cursor, was abandoned mid-way (reset)
   * before its subscriber had all of it. With flow control, where every
   * group is wanted, it is delivered again should it be written again whole
   * (a relay fetches it anew); otherwise nothing changes.
   */
  abandoned(sequence: number): void {
    if (!this.#source.flow || sequence < this.#min) return;
    const ring = this.#ring;
    const held = ring.find(sequence);
    // Written again already: from that arrival on, else from the next one.
    const from = held && held.live?.state !== "reset" ? held.index : ring.written;
    this.#holes.passed(sequence, sequence + 1, from);
  }

  /** True while groups the cache dropped are being read back for this cursor. */
  get reading(): boolean {
    return this.#gap !== undefined;
  }

  // Flow control: nothing is skipped for the queue's length. The cursor delivers sequence
  // after sequence; one the cache dropped before the cursor took it is read back. Only a
  // cursor whose next group has waited longer than the lag bound is slower than the
  // track, and skips to the newest.
  #pollFlow(flow: CursorFlow): CachedGroup | undefined {
    const ring = this.#ring;
    const late = this.#holes.late(ring, this.#source.written) ??
      this.#holes.readBack(flow, this.#readDone, this.#skipLate);
    if (late) return late;
    if (this.#fromFirst) {
      // Nothing before the first group written is wanted (nor was there any).
      const first = this.#source.first();
      if (first < 0) return undefined;
      this.#passed = Math.max(this.#passed, first - 1);
      this.#fromFirst = false;
    }
    for (;;) {
      const gap = this.#gap;
      if (gap) {
        if (flow.clock() - this.#gapSince > flow.lagMs) return this.#skipFlow();
        // Written meanwhile (a relay repairs too): the cache has it, the read is not awaited.
        const written = ring.find(this.#passed + 1);
        const read = written && written.live?.state !== "reset" ? gap.skip(written) : gap.take();
        if (read === "reading") return undefined;
        if (gap.remaining === 0) this.#endGap();
        if (typeof read === "object") return read;
        // None there when it was read: delivered should it still be written. It may have been
        // written since the read, and dropped from the cache before this cursor came for the
        // answer (a relay's burst once its route is back): then the arrivals still held are
        // looked at again, and if it is not among them it is read back (see PassedHoles).
        this.#passed++;
        const since = this.#source.written(this.#passed) ? -1 : ring.written;
        this.#holes.passed(this.#passed, this.#passed + 1, since);
        continue;
      }
      const next = this.#passed + 1;
      if (next > this.#source.latest()) return undefined;
      // Groups come in sequence order here, so the next one is mostly the next arrival.
      const arrived = ring.at(this.#index);
      const found = arrived?.sequence === next && arrived.live?.state !== "reset"
        ? arrived
        : ring.find(next);
      // One abandoned mid-way (its upstream went away) may come again whole: a hole till then.
      const group = found?.live?.state === "reset" ? undefined : found;
      if (group) {
        this.#index = group.index + 1;
        return this.#waited(flow, group.writtenAt) > flow.lagMs ? this.#skipFlow() : group;
      }
      const { above, below } = ring.around(next);
      if ((below || found) && above) {
        // A hole among what is held: the group is on its way (reordered, retransmitted, or
        // being repaired by a relay). Wait a little for it; then go on without it, and
        // deliver it should it still come (late, like any late group).
        const waited = flow.clock() - above.writtenAt;
        if (waited < HOLE_WAIT_MS) {
          this.#wakeIn(HOLE_WAIT_MS - waited);
          return undefined;
        }
        if (flow.fetch) {
          // Read it back (a relay's FETCH upstream finds what its own repair has not written
          // yet); one not there either is passed, and delivered should it still come.
          this.#gapSince = Math.max(above.writtenAt, this.#openedAt);
          this.#gap = this.#readBack(next, above.sequence, flow.fetch, flow.timers);
          continue;
        }
        this.#holes.passed(next, above.sequence, ring.written);
        this.#passed = above.sequence - 1;
        continue;
      }
      // Older than everything held: dropped before this cursor took it. Read it back.
      if (!flow.fetch) return this.#skipFlow();
      const to = above?.sequence ?? this.#source.latest() + 1;
      // Arrivals this cursor had not read are gone too: they have waited at least since the
      // last of them was written. (A cursor back from a stall may find everything it missed
      // dropped by age and only a group written just now held: measured from that group, it
      // would read its whole stall back instead of skipping.)
      const gone = this.#index < ring.oldest ? ring.goneWrittenAt : Infinity;
      const since = Math.min(above?.writtenAt ?? flow.clock(), gone);
      this.#gapSince = Math.max(since, this.#openedAt);
      this.#gap = this.#readBack(next, to, flow.fetch, flow.timers);
    }
  }

  // Reads `[from, to)` back through `fetch`, waking this cursor as the groups come.
  #readBack(from: number, to: number, fetch: GapFetch, timers: Timers): GapReader {
    return new GapReader(from, to, this.#gapSince, fetch, this.#readDone, timers);
  }

  // How long a group written at `writtenAt` has waited for this cursor: not since before it
  // was opened (a subscriber asking for older groups has the lag bound to read them).
  #waited(flow: CursorFlow, writtenAt: number): number {
    return flow.clock() - Math.max(writtenAt, this.#openedAt);
  }

  // Slower than the track: on to the newest group. Every sequence passed over counts.
  #skipFlow(): CachedGroup | undefined {
    this.#endGap();
    this.#holes.clear();
    const latest = this.#source.latest();
    const target = this.#ring.find(latest);
    const passed = latest - (this.#passed + 1) + (target ? 0 : 1);
    this.#passed = target ? latest - 1 : latest;
    if (passed > 0) this.#skip(passed);
    return target;
  }

  #timers(): Timers {
    return this.#source.flow?.timers ?? systemTimers;
  }

  // Wakes whoever waits for this cursor in `ms` (one timer at a time).
  #wakeIn(ms: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = this.#timers().setTimeout(() => {
      this.#timer = undefined;
      this.#readDone();
    }, Math.max(1, ms));
  }

  #endGap(): void {
    this.#gap?.close();
    this.#gap = undefined;
  }

  // A group was read back: wake whoever waits for this cursor.
  readonly #readDone = (): void => {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  };

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
      const reading = this.#gap !== undefined || this.#holes.reading;
      if (signal?.aborted || (this.#source.closed() && !reading)) return undefined;
      if (!reading && this.#timer === undefined) {
        await this.#source.changes.wait(signal);
        continue;
      }
      // Reading back: a read, a write or the abort goes on.
      await new Promise<void>((resolve) => {
        this.onChange(resolve);
        signal?.addEventListener("abort", () => resolve(), { once: true });
      });
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
    if (this.#gap || this.#holes.reading || this.#timer !== undefined) this.#waiter = callback;
  }

  /** Releases the cursor (idempotent). */
  close(): void {
    this.#endGap();
    this.#holes.clear();
    if (this.#timer !== undefined) this.#timers().clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#release?.();
    this.#release = undefined;
  }
}
