import { DeliveryGaps, type GroupFetcher, type TrackProducer } from "../../moq/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { stamped } from "./upstream_track.ts";

/**
 * How long a gap in what the upstream delivered may stay open before the
 * distributor fetches the missing groups, ms. Each group travels on its own
 * stream, so on a lossy link a retransmitted one lands a little after newer
 * ones; after a route change there is nothing to wait for.
 */
export const GAP_REPAIR_WAIT_MS = 500;

/** Most groups of one gap the distributor fetches; older ones in it are counted as lost. */
const GAP_REPAIR_LIMIT = 1024;

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
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** Starts with no gap open. */
  constructor(options: GapRepairOptions) {
    this.#opts = options;
    this.#gaps = new DeliveryGaps(GAP_REPAIR_WAIT_MS, options.now);
  }

  /** The lowest sequence still missing, if any gap is open. */
  get firstMissing(): number | undefined {
    return this.#gaps.firstMissing;
  }

  /**
   * Records a group the upstream delivered. `now` fetches every open gap at
   * once (the first group after a route change: what the old route did not
   * deliver will not come late from it).
   */
  received(sequence: number, now: boolean): void {
    this.#gaps.sent(sequence);
    if (now) this.#repair(this.#gaps.expired(true));
    this.#arm();
  }

  /** Stops the timer and every fetch in flight. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#aborts.abort();
  }

  // Fetches the gaps that stayed open past their wait when that time comes.
  #arm(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const at = this.#gaps.nextDeadline();
    if (at === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#repair(this.#gaps.expired());
      this.#arm();
    }, Math.max(1, at - this.#opts.now()));
  }

  #repair(ranges: ReadonlyArray<readonly [number, number]>): void {
    for (const [start, end] of ranges) {
      const first = Math.max(start, end - GAP_REPAIR_LIMIT + 1);
      if (first > start) this.#lost(first - start, start, first - 1, "too many to fetch");
      void this.#repairRange(first, end);
    }
  }

  // The lowest missing group is fetched first: when the route cannot fetch it (a publisher
  // with no FETCH, or whose sequences have holes by design), the rest is not asked for.
  async #repairRange(start: number, end: number): Promise<void> {
    const producer = this.#opts.producer;
    const missing: number[] = [];
    for (let s = start; s <= end; s++) if (!producer.has(s)) missing.push(s);
    if (missing.length === 0) return;
    const [first, ...rest] = missing;
    const probed = await this.#repairOne(first!);
    if (probed) await Promise.all(rest.map((s) => this.#repairOne(s)));
    if (this.#stopped) return;
    const lost = missing.filter((s) => !producer.has(s)).length;
    if (lost > 0) this.#lost(lost, start, end, "no route could fetch them");
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
    this.#opts.metrics.groupRepairsTotal.inc();
    return true;
  }

  // Groups no upstream delivered and none could fetch are lost to every subscriber, who
  // skip forward over them: one skip per gap, whatever its length.
  #lost(count: number, start: number, end: number, why: string): void {
    this.#opts.metrics.subscriberSkipsTotal.inc();
    this.#opts.log?.(
      `relay: ${this.#opts.label}: ${count} group(s) in ${start}..${end} lost: ${why}`,
    );
  }
}
