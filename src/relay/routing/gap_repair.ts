import { DeliveryGaps, type GroupFetcher, type TrackProducer } from "../../moq/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { stamped } from "./upstream_track.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/**
 * How long a gap in what the upstream delivered may stay open before the
 * distributor fetches the missing groups, ms. Each group travels on its own
 * stream, so on a lossy link a retransmitted one lands a little after newer
 * ones; after a route change there is nothing to wait for.
 */
export const GAP_REPAIR_WAIT_MS = 500;

/** Most groups of one gap the distributor fetches; older ones in it are counted as lost. */
const GAP_REPAIR_LIMIT = 1024;

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
 * to the ring as a late group. A gap that cannot be fetched counts once in
 * `subscriber_skips_total`; repairs count in `group_repairs_total`.
 */
export class GapRepair {
  readonly #opts: GapRepairOptions;
  readonly #gaps: DeliveryGaps;
  readonly #aborts = new AbortController();
  // Groups asked for at least once and not in the ring yet, with the attempts made.
  readonly #attempts = new Map<number, number>();
  // Those of them waiting for their next attempt.
  readonly #waiting = new Set<number>();
  readonly #timers: Timers;
  #timer: unknown;
  #retryTimer: unknown;
  #stopped = false;

  /** Starts with no gap open. */
  constructor(options: GapRepairOptions) {
    this.#opts = options;
    this.#timers = options.timers ?? systemTimers;
    this.#gaps = new DeliveryGaps(GAP_REPAIR_WAIT_MS, options.now);
  }

  /** The lowest sequence still missing: in an open gap, or fetched without success so far. */
  get firstMissing(): number | undefined {
    let first = this.#gaps.firstMissing;
    for (const s of this.#attempts.keys()) if (first === undefined || s < first) first = s;
    return first;
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
    if (now) {
      this.#repair(this.#gaps.expired(true));
      this.#retry();
    }
    this.#arm();
  }

  /** Stops the timers and every fetch in flight. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    if (this.#retryTimer !== undefined) this.#timers.clearTimeout(this.#retryTimer);
    this.#aborts.abort();
  }

  // Fetches the gaps that stayed open past their wait when that time comes.
  #arm(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const at = this.#gaps.nextDeadline();
    if (at === undefined) return;
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      this.#repair(this.#gaps.expired());
      this.#arm();
    }, Math.max(1, at - this.#opts.now()));
  }

  #repair(ranges: ReadonlyArray<readonly [number, number]>): void {
    for (const [start, end] of ranges) {
      const first = Math.max(start, end - GAP_REPAIR_LIMIT + 1);
      if (first > start) this.#lost([[start, first - 1]], "too many to fetch");
      const sequences: number[] = [];
      for (let s = first; s <= end; s++) sequences.push(s);
      void this.#fetchAll(sequences);
    }
  }

  // Asks again for every group waiting for another attempt.
  #retry(): void {
    if (this.#retryTimer !== undefined) this.#timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#waiting.size === 0 || this.#stopped) return;
    const sequences = [...this.#waiting].sort((a, b) => a - b);
    this.#waiting.clear();
    void this.#fetchAll(sequences);
  }

  // The lowest missing group is fetched first: when the route cannot fetch it (a publisher
  // with no FETCH, or whose sequences have holes by design), the rest is not asked for.
  async #fetchAll(sequences: readonly number[]): Promise<void> {
    const producer = this.#opts.producer;
    const missing = sequences.filter((s) => !producer.has(s));
    if (missing.length === 0) return;
    for (const s of missing) this.#attempts.set(s, (this.#attempts.get(s) ?? 0) + 1);
    const [first, ...rest] = missing;
    const probed = await this.#repairOne(first!);
    if (probed) await Promise.all(rest.map((s) => this.#repairOne(s)));
    if (this.#stopped) return;
    this.#failed(missing.filter((s) => !producer.has(s) && this.#attempts.has(s)));
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

  // Fetches one group into the ring; true when the ring has it afterwards.
  async #repairOne(sequence: number): Promise<boolean> {
    const { producer, fetchMissing } = this.#opts;
    const fetched = await fetchMissing?.(sequence, this.#aborts.signal).catch(() => undefined);
    if (this.#stopped || producer.has(sequence)) return true;
    if (!fetched) return false;
    try {
      producer.writeGroup(sequence, fetched.frames, stamped(fetched.timestamp));
    } catch {
      return false; // a peer's answer the ring cannot take (a timestamp out of range)
    }
    this.#attempts.delete(sequence);
    this.#opts.metrics.groupRepairsTotal.inc();
    return true;
  }

  // Groups no upstream delivered and none could fetch are lost to every subscriber, who
  // skip forward over them: one skip per gap, whatever its length.
  #lost(gaps: ReadonlyArray<readonly [number, number]>, why: string): void {
    for (const [start, end] of gaps) {
      this.#opts.metrics.subscriberSkipsTotal.inc();
      this.#opts.log?.(
        `relay: ${this.#opts.label}: ${end - start + 1} group(s) in ${start}..${end} lost: ${why}`,
      );
    }
  }
}

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
