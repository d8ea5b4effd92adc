import { DeliveryGaps, type GroupFetcher, LiveFrames, type TrackProducer } from "../../moq/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { ended, stamped } from "./upstream_track.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/**
 * How long a gap in what the upstream delivered may stay open before the
 * distributor fetches the missing groups, ms. Each group travels on its own
 * stream, so on a lossy link a retransmitted one lands a little after newer
 * ones; after a route change there is nothing to wait for.
 */
export const GAP_REPAIR_WAIT_MS = 500;

/**
 * Most groups being repaired at once (asked for, or waiting to be asked
 * again): a longer gap is repaired window by window, lowest first, the next
 * groups asked for as earlier ones are repaired or given up. The FETCHes
 * themselves are bounded further by the route's forwarder (16 in flight).
 */
export const GAP_REPAIR_WINDOW = 1024;

/**
 * How many times a group is asked for before it counts as lost. A FETCH
 * fails when the route's session is dying (a funnel whose link went silent
 * still looks alive for its idle timeout), so a failed group is asked for
 * again: at once when the broadcast gets a route again, otherwise after
 * {@link GAP_RETRY_FIRST_MS}, doubling. The four retries span 15 s, longer
 * than the relay waits for a publisher to come back (RELAY_PUBLISHER_GRACE_MS).
 */
const GAP_REPAIR_ATTEMPTS = 5;

/** Wait before a failed group is first asked for again, ms; doubled after each failure. */
export const GAP_RETRY_FIRST_MS = 1000;

/** Options of a {@link GapRepair}. */
export interface GapRepairOptions {
  /** The ring repaired groups are written to. */
  readonly producer: TrackProducer;
  /** Where missing groups are fetched from; without it every gap is lost. */
  readonly fetchMissing: GroupFetcher | undefined;
  /** Metrics to update. */
  readonly metrics: RelayMetrics;
  /** Clock in ms. */
  readonly now: () => number;
  /** Timers of the repair's waits and retries (default the global ones; tests pass faster ones). */
  readonly timers?: Timers;
  /** `/path/track`, for log lines. */
  readonly label: string;
  /** Logs a line. */
  readonly log: ((line: string) => void) | undefined;
}

/**
 * Repairs the gaps in what one track's upstream delivered: a sequence
 * missing below the highest one received is fetched once it stayed open
 * past {@link GAP_REPAIR_WAIT_MS} (at once after a route change) and written
 * to the ring as a late group, at most {@link GAP_REPAIR_WINDOW} at a time.
 *
 * Every missing group is asked for, except those the ring can no longer
 * take: a late group more than 4096 below the newest one (the producer's
 * {@link TrackProducer.lateFloor}) would be refused, so such groups are given
 * up unasked, and so is a group whose repair is answered only after the
 * track moved that far on. That bounds the state (a publisher jumping its
 * sequence by 2^50 leaves at most 4096 sequences to repair) and the work.
 * Groups no route could fetch and groups given up are lost: one skip in
 * `subscriber_skips_total` per hole, whatever its length, and a log line
 * saying why; repairs count in `group_repairs_total`.
 */
export class GapRepair {
  readonly #opts: GapRepairOptions;
  readonly #gaps: DeliveryGaps;
  readonly #aborts = new AbortController();
  // Missing ranges past their wait and not asked for yet, lowest first, all at or above the
  // ring's late floor: at most 4096 sequences.
  readonly #queue: [number, number][] = [];
  // Groups asked for and not in the ring yet, with the attempts made: at most GAP_REPAIR_WINDOW.
  readonly #attempts = new Map<number, number>();
  // Those of them waiting for their next attempt.
  readonly #waiting = new Set<number>();
  readonly #timers: Timers;
  #timer: unknown;
  #retryTimer: unknown;
  // The end of the last range counted lost: a range lost right after it is the same hole
  // (a long gap lost window by window), which its subscribers skip over once.
  #lostThrough = -2;
  // Lost groups not logged yet (at most one line a second), and when the next line may come.
  #unlogged = { groups: 0, gaps: 0 };
  #quietUntil = -Infinity;
  #stopped = false;

  /** Starts with no gap open. */
  constructor(options: GapRepairOptions) {
    this.#opts = options;
    this.#timers = options.timers ?? systemTimers;
    this.#gaps = new DeliveryGaps(GAP_REPAIR_WAIT_MS, options.now);
  }

  /**
   * The lowest sequence still missing that the ring can take: in an open
   * gap, waiting to be asked for, or fetched without success so far.
   */
  get firstMissing(): number | undefined {
    let first = this.#gaps.firstMissing;
    const queued = this.#queue[0]?.[0];
    if (queued !== undefined && (first === undefined || queued < first)) first = queued;
    for (const s of this.#attempts.keys()) if (first === undefined || s < first) first = s;
    return first === undefined ? undefined : Math.max(first, this.#opts.producer.lateFloor);
  }

  /** Groups being repaired now: asked for, or waiting to be asked again (at most {@link GAP_REPAIR_WINDOW}). */
  get repairing(): number {
    return this.#attempts.size;
  }

  /**
   * Records a group the upstream delivered. `now` fetches every open gap at
   * once, and every group waiting to be asked for again (the first group
   * after a route change: what the old route did not deliver will not come
   * late from it, and the new route may have what the old one failed to
   * fetch).
   */
  received(sequence: number, now: boolean): void {
    this.#gaps.sent(sequence);
    this.#attempts.delete(sequence);
    this.#waiting.delete(sequence);
    const first = this.#gaps.firstMissing;
    // A gap reaching below the late floor is repaired at once: waiting longer loses more of it.
    if (now || (first !== undefined && first < this.#opts.producer.lateFloor)) {
      this.#enqueue(this.#gaps.expired(true));
    } else {
      this.#giveUpTooOld();
    }
    if (now) this.#retry();
    this.#pump();
    this.#arm();
  }

  /**
   * Records a group the upstream abandoned part-way (its stream was reset):
   * it is fetched at once, and asked for again as any missing group, until a
   * whole one is written.
   */
  abandoned(sequence: number): void {
    if (this.#stopped || this.#attempts.has(sequence)) return;
    if (this.#opts.producer.holds(sequence) !== "missing") return;
    // The queue stays lowest first; a sequence already queued stays where it is.
    const queue = this.#queue;
    let at = queue.length;
    while (at > 0 && queue[at - 1]![0] > sequence) at--;
    const before = queue[at - 1];
    if (before && sequence <= before[1]) return;
    queue.splice(at, 0, [sequence, sequence]);
    this.#pump();
  }

  /** Stops the timers and every fetch in flight. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    if (this.#retryTimer !== undefined) this.#timers.clearTimeout(this.#retryTimer);
    this.#aborts.abort();
    this.#queue.length = 0;
    this.#attempts.clear();
    this.#waiting.clear();
  }

  // Queues the gaps that stayed open past their wait when that time comes.
  #arm(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const at = this.#gaps.nextDeadline();
    if (at === undefined) return;
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      this.#enqueue(this.#gaps.expired());
      this.#pump();
      this.#arm();
    }, Math.max(1, at - this.#opts.now()));
  }

  // Queues ranges to repair (they come lowest first); what lies below the late floor is lost.
  #enqueue(ranges: ReadonlyArray<readonly [number, number]>): void {
    for (const [start, end] of ranges) {
      const last = this.#queue[this.#queue.length - 1];
      if (last && start === last[1] + 1) last[1] = end;
      else this.#queue.push([start, end]);
    }
    this.#giveUpTooOld();
  }

  // Gives up the queued groups the track moved too far past for the ring to take.
  #giveUpTooOld(): void {
    const floor = this.#opts.producer.lateFloor;
    const lost: (readonly [number, number])[] = [];
    while (this.#queue.length > 0 && this.#queue[0]![0] < floor) {
      const range = this.#queue[0]!;
      lost.push([range[0], Math.min(range[1], floor - 1)]);
      if (range[1] < floor) this.#queue.shift();
      else range[0] = floor;
    }
    if (lost.length > 0) this.#lost(lost, TOO_OLD);
  }

  // Asks for the lowest queued groups while the window has room, one batch per gap: each
  // batch's first group probes the route for that gap alone.
  #pump(): void {
    if (this.#stopped) return;
    this.#giveUpTooOld();
    const producer = this.#opts.producer;
    let room = GAP_REPAIR_WINDOW - this.#attempts.size;
    while (room > 0 && this.#queue.length > 0) {
      const range = this.#queue[0]!;
      const batch: number[] = [];
      const end = Math.min(range[1], range[0] + room - 1);
      // One that came late meanwhile is done.
      for (let s = range[0]; s <= end; s++) if (producer.holds(s) === "missing") batch.push(s);
      if (end === range[1]) this.#queue.shift();
      else range[0] = end + 1;
      // Its attempts are counted before the first FETCH is awaited.
      if (batch.length > 0) void this.#fetchAll(batch);
      room = GAP_REPAIR_WINDOW - this.#attempts.size;
    }
  }

  // Asks again for every group waiting for another attempt.
  #retry(): void {
    if (this.#retryTimer !== undefined) this.#timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#waiting.size === 0 || this.#stopped) return;
    const sequences = [...this.#waiting].sort((a, b) => a - b);
    this.#waiting.clear();
    // Again one batch per gap, so that one gap's probe does not decide another's fate.
    let from = 0;
    for (let i = 1; i <= sequences.length; i++) {
      if (i < sequences.length && sequences[i] === sequences[i - 1]! + 1) continue;
      void this.#fetchAll(sequences.slice(from, i));
      from = i;
    }
    this.#pump(); // those written or given up meanwhile left room
  }

  // The lowest missing group is fetched first: when the route cannot fetch it (a publisher
  // with no FETCH, or whose sequences have holes by design), the rest is not asked for.
  async #fetchAll(sequences: readonly number[]): Promise<void> {
    const missing = this.#settle(sequences);
    if (missing.length === 0) return;
    for (const s of missing) this.#attempts.set(s, (this.#attempts.get(s) ?? 0) + 1);
    const [first, ...rest] = missing;
    const probed = await this.#repairOne(first!);
    if (probed) await Promise.all(rest.map((s) => this.#repairOne(s)));
    if (this.#stopped) return;
    this.#failed(this.#settle(missing.filter((s) => this.#attempts.has(s))));
    this.#pump();
  }

  // Of groups being repaired, those still missing: one written meanwhile is done, one the
  // track moved too far past for the ring to take is lost; neither stays in the attempts.
  #settle(sequences: readonly number[]): number[] {
    const producer = this.#opts.producer;
    const missing: number[] = [];
    const tooOld: number[] = [];
    for (const s of sequences) {
      const presence = producer.holds(s);
      if (presence === "missing") {
        missing.push(s);
        continue;
      }
      this.#attempts.delete(s);
      if (presence === "too old") tooOld.push(s);
    }
    if (tooOld.length > 0) this.#lost(ranges(tooOld), TOO_OLD);
    return missing;
  }

  // Groups an attempt did not bring: asked for again later, or lost after the last attempt.
  #failed(sequences: readonly number[]): void {
    const lost: number[] = [];
    let fewest = Infinity;
    for (const s of sequences) {
      const attempts = this.#attempts.get(s) ?? 0;
      if (attempts >= GAP_REPAIR_ATTEMPTS) {
        this.#attempts.delete(s);
        lost.push(s);
      } else {
        this.#waiting.add(s);
        fewest = Math.min(fewest, attempts);
      }
    }
    if (lost.length > 0) this.#lost(ranges(lost), "no route could fetch them");
    if (fewest === Infinity || this.#retryTimer !== undefined) return;
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retry();
    }, GAP_RETRY_FIRST_MS * 2 ** (fewest - 1));
  }

  // Fetches one group into the ring; false when the route did not bring a group still missing.
  async #repairOne(sequence: number): Promise<boolean> {
    const { producer, fetchMissing } = this.#opts;
    const fetched = await fetchMissing?.(sequence, this.#aborts.signal).catch(() => undefined);
    // Written meanwhile, or now too old for the ring (#settle counts it): nothing to write.
    if (this.#stopped || producer.holds(sequence) !== "missing") return true;
    if (!fetched) return false;
    try {
      producer.writeGroup(sequence, fetched.frames, stamped(fetched.timestamp));
    } catch {
      return false; // a peer's answer the ring cannot take (a timestamp out of range)
    }
    // An answer still arriving repairs the group once it ended whole; one reset mid-way (its
    // route's session ended) was an attempt that failed: the group is missing again.
    if (fetched.frames instanceof LiveFrames) {
      await ended(fetched.frames);
      if (this.#stopped || fetched.frames.state === "reset") return false;
    }
    this.#attempts.delete(sequence);
    this.#opts.metrics.groupRepairsTotal.inc();
    return true;
  }

  // Groups no upstream delivered and none could fetch are lost to every subscriber, who
  // skip forward over them: one skip per hole, whatever its length. At most one log line a
  // second: a publisher leaving a hole after every group would otherwise flood the log; the
  // holes in between are summed into the next line.
  #lost(gaps: ReadonlyArray<readonly [number, number]>, why: string): void {
    let groups = 0;
    for (const [start, end] of gaps) {
      if (start !== this.#lostThrough + 1) this.#opts.metrics.subscriberSkipsTotal.inc();
      this.#lostThrough = Math.max(this.#lostThrough, end);
      groups += end - start + 1;
    }
    const first = gaps[0];
    const last = gaps[gaps.length - 1];
    if (!first || !last || !this.#opts.log) return;
    const now = this.#opts.now();
    if (now < this.#quietUntil) {
      this.#unlogged.groups += groups;
      this.#unlogged.gaps += gaps.length;
      return;
    }
    this.#quietUntil = now + LOST_LOG_EVERY_MS;
    const where = gaps.length === 1 ? "" : `${gaps.length} gaps of `;
    const { groups: more, gaps: moreGaps } = this.#unlogged;
    const since = more === 0 ? "" : `; ${more} more in ${moreGaps} gap(s) since the last line`;
    this.#unlogged = { groups: 0, gaps: 0 };
    const range = `${where}${first[0]}..${last[1]}`;
    this.#opts.log(
      `relay: ${this.#opts.label}: ${groups} group(s) in ${range} lost: ${why}${since}`,
    );
  }
}

// Least time between two log lines about lost groups, ms.
const LOST_LOG_EVERY_MS = 1000;

// Why a group the ring can no longer take is given up.
const TOO_OLD = "the track moved too far past them for the ring to take them (4096 groups)";

/** Sorted sequences as inclusive ranges of consecutive ones. */
function ranges(sequences: readonly number[]): (readonly [number, number])[] {
  const out: [number, number][] = [];
  for (const s of sequences) {
    const last = out[out.length - 1];
    if (last && s === last[1] + 1) last[1] = s;
    else out.push([s, s]);
  }
  return out;
}
