import { errorText } from "../../error_text/mod.ts";
import {
  type GroupFetcher,
  type LiveFrames,
  type TrackInfo,
  TrackProducer,
} from "../../moq/mod.ts";
import type { RateMeter, RelayMetrics } from "../metrics/mod.ts";
import { activeTracer, recordAttributes, SpanKind } from "../../tracing/mod.ts";
import { GapRepair } from "./gap_repair.ts";
import { flowControl } from "./flow_control.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { RouteSource } from "./route_table.ts";
import { BackpressureQueue } from "../../wire/mod.ts";
import type { SwitchStart, TrackEvent } from "./track_event.ts";
import {
  closeQuietly,
  ended,
  releaseWhenAnswered,
  stamped,
  type UpstreamTrack,
} from "./upstream_track.ts";

/** Options of a {@link TrackDistributor}. */
export interface DistributorOptions {
  /** Broadcast path, without a leading slash. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Groups kept in the ring (GROUP_CACHE_SIZE). */
  readonly cacheSize: number;
  /** Age past which the ring drops a group (RELAY_CACHE_MS; 0 or unset: none). */
  readonly cacheMs?: number;
  /** Payload bytes the ring holds at most (RELAY_CACHE_BYTES; unset: no limit). */
  readonly cacheBytes?: number;
  /** The upstream track's properties, advertised as they are (its timescale above all). */
  readonly info?: TrackInfo | undefined;
  /**
   * Where a FETCH the ring cannot answer goes (the broadcast's upstream, see
   * fetch_forward.ts); also how the distributor fills gaps in what its
   * upstream delivered.
   */
  readonly fetchMissing?: GroupFetcher;
  /** Metrics to update. */
  readonly metrics: RelayMetrics;
  /** Clock in ms (injected). */
  readonly now: () => number;
  /** Timers of gap repair's waits and retries (default the global ones). */
  readonly repairTimers?: Timers;
  /** Timers of the idle release (default the system's). */
  readonly timers?: Timers;
  /** Logs a line. */
  readonly log?: (line: string) => void;
  /**
   * How long the upstream subscription is kept with no subscriber, in ms
   * (default 5000): a subscriber arriving meanwhile still gets the latest group.
   */
  readonly idleMs?: number;
}

/** One upstream subscription feeding the ring, and the route it came through. */
interface Feed {
  readonly upstream: UpstreamTrack;
  readonly source: RouteSource;
  /** The route's bitrate meter, given each group's size as it arrives. */
  readonly meter: RateMeter | undefined;
  /** A switch's feed until its first group: the gaps open then are repaired at once. */
  switched: boolean;
  /** True once its read loop finished. */
  done: boolean;
}

/**
 * Groups received from upstream within one event-loop turn go to subscribers
 * as one burst, and none younger than this is lost to GROUP_CACHE_SIZE or a
 * subscriber's queue bound (see TrackProducerOptions.burstMs). Groups arrive
 * one stream at a time; sent one by one, each took nearly a packet of its own
 * per subscriber, which on a busy relay cost more than the groups themselves.
 */
const GROUP_BURST_MS = 50;

/**
 * Fans one upstream track out to every downstream subscriber. Upstream
 * groups go into a ring of the most recent GROUP_CACHE_SIZE complete groups
 * (a TrackProducer); each subscriber's session reads it through its own
 * cursor, so a slow subscriber never holds back the upstream reader or the
 * others, starts at the latest group, and when it falls behind the ring is
 * skipped forward to the latest group.
 *
 * The distributor decides nothing about routes: it reports what happened
 * ({@link events}) and the relay acts. When the broadcast's route changes,
 * the relay subscribes through the new route from {@link retarget}'s start
 * and hands the upstream over ({@link feed}); the old upstream is released
 * only once the new one answered, so subscribers keep their subscription:
 * the ring takes each sequence once, whichever upstream delivers it.
 *
 * Gaps are repaired, not skipped: a sequence missing below the highest one
 * received (lost on a route change, dropped by an upstream that fell behind,
 * or late beyond GAP_REPAIR_WAIT_MS, see gap_repair.ts) is fetched through the route
 * (for a funnel's track that reaches its ledger) and written to the ring as
 * a late group, which every subscriber that has not skipped past it gets.
 * A gap that cannot be fetched counts once in `subscriber_skips_total`
 * (its subscribers skip forward over it), as does each subscriber that
 * falls behind and skips forward; repairs count in `group_repairs_total`.
 * A gap is repaired up to GAP_REPAIR_WINDOW groups at a time, the first of
 * each gap (each window of a long one) fetched before the rest, so a route
 * that cannot fetch costs one request per gap.
 */
export class TrackDistributor {
  /** Broadcast path without a leading slash. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** The source every subscriber's session serves from. */
  readonly producer: TrackProducer;
  readonly #opts: DistributorOptions;
  readonly #trackLabel: { track: string };
  // Flow controlled: every group is wanted (see flowControl).
  readonly #everyGroup: boolean;
  #feed: Feed | undefined;
  #target: RouteSource | undefined;
  readonly #repair: GapRepair;
  #subscribers = 0;
  #ended = false;
  readonly #events = new BackpressureQueue<TrackEvent>(Infinity);
  #idle: unknown;

  /** Creates a distributor; call {@link start} with the upstream once it is available. */
  constructor(options: DistributorOptions) {
    this.#opts = options;
    this.path = options.path;
    this.track = options.track;
    this.#trackLabel = { track: `/${options.path}/${options.track}` };
    this.#everyGroup = options.info?.ordered === true;
    const m = options.metrics;
    const egress = m.egressBytesTotal.bind(this.#trackLabel);
    const delivery = m.groupDeliverySeconds.bind(this.#trackLabel);
    this.producer = new TrackProducer({
      ...options.info,
      cache: options.cacheSize,
      cacheMs: options.cacheMs ?? 0,
      cacheBytes: options.cacheBytes ?? Infinity,
      burstMs: GROUP_BURST_MS,
      ...flowControl(options.info),
      clock: options.now,
      ...(options.fetchMissing ? { fetchMissing: options.fetchMissing } : {}),
      observer: {
        attached: () => {
          this.#subscribers++;
          this.#disarm();
        },
        detached: () => {
          this.#subscribers--;
          if (this.#subscribers === 0) this.#arm();
        },
        // Once per group per subscriber: series bound once, not looked up by label each time.
        delivered: (group) => delivery(Math.max(0, this.#opts.now() - group.writtenAt) / 1000),
        // Every payload byte a subscriber's session hands its transport, frames that follow
        // a cut-through group's hand-over and FETCH answers included.
        sent: (_group, bytes) => egress(bytes),
        // The spec's count: subscribers skipped forward, not the groups they passed over.
        skipped: (_count, forward) => {
          if (forward) m.subscriberSkipsTotal.inc();
        },
      },
    });
    this.#repair = new GapRepair({
      producer: this.producer,
      fetchMissing: options.fetchMissing,
      metrics: m,
      now: options.now,
      ...(options.repairTimers ? { timers: options.repairTimers } : {}),
      label: this.#trackLabel.track,
      log: options.log,
    });
  }

  /** True once upstream ended or the distributor closed. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Number of attached subscribers. */
  get subscriberCount(): number {
    return this.#subscribers;
  }

  /** Groups held in the ring. */
  get depth(): number {
    return this.producer.cached;
  }

  /** Groups being received from upstream now. */
  get fillsInflight(): number {
    return this.#feed?.upstream.inflight?.() ?? 0;
  }

  /** Label of this track on metrics whose only track label is `track`. */
  get trackLabel(): string {
    return this.#trackLabel.track;
  }

  /**
   * What happened to the track, in order, for the relay to act on; ends
   * when the distributor ended.
   */
  get events(): AsyncIterable<TrackEvent> {
    return this.#events;
  }

  /** The route the distributor reads from, or is switching to. */
  get source(): RouteSource | undefined {
    return this.#target;
  }

  /** Starts reading the first upstream subscription, opened through `source`. */
  start(upstream: UpstreamTrack, source: RouteSource, meter?: RateMeter): void {
    if (this.#ended) return closeQuietly(upstream);
    this.#target = source;
    this.#begin({ upstream, source, meter, switched: false, done: false });
  }

  /**
   * The broadcast's route moves to `source`: it becomes the target, and the
   * answer says where the upstream subscription through it should start.
   * Undefined when the distributor ended or already targets `source`.
   */
  retarget(source: RouteSource): SwitchStart | undefined {
    if (this.#ended || this.#target === source) return undefined;
    this.#target = source;
    const latest = this.producer.latest;
    const start = this.#repair.firstMissing ?? (latest === undefined ? undefined : latest + 1);
    return { start, switched: latest !== undefined };
  }

  /** True while the distributor runs and targets `source`. */
  targets(source: RouteSource): boolean {
    return !this.#ended && this.#target === source;
  }

  /**
   * The upstream through the target could not be opened: true when the
   * current upstream still runs and is kept (the target goes back to it),
   * false when none does.
   */
  fallBack(): boolean {
    const old = this.#feed;
    if (!old || old.done) return false;
    this.#target = old.source;
    return true;
  }

  /**
   * Hands over the upstream subscription opened through the target after
   * {@link retarget}; it replaces the current one once it answered. An
   * upstream no longer wanted (the distributor ended, or retargeted since)
   * is closed.
   */
  feed(upstream: UpstreamTrack, source: RouteSource, start: SwitchStart, meter?: RateMeter): void {
    if (!this.targets(source)) return closeQuietly(upstream);
    this.#begin({ upstream, source, meter, switched: start.switched, done: false });
  }

  #begin(feed: Feed): void {
    const old = this.#feed;
    this.#feed = feed;
    if (old) {
      releaseWhenAnswered(old.upstream, old.done, feed.upstream, this.#opts.timers ?? systemTimers);
    }
    if (this.#subscribers === 0) this.#arm();
    this.#read(feed).then(() => this.#fed(feed), (e) => {
      if (feed === this.#feed) {
        this.#opts.log?.(`relay: upstream of /${this.path}/${this.track} failed: ${errorText(e)}`);
      }
      this.#fed(feed);
    });
  }

  // A feed's loop ended: if it was the current one, the relay decides what follows.
  #fed(feed: Feed): void {
    feed.done = true;
    if (feed !== this.#feed || this.#ended) return;
    void this.#events.push({ kind: "upstream-ended", source: feed.source });
  }

  async #read(feed: Feed): Promise<void> {
    const m = this.#opts.metrics;
    // What the upstream queue dropped is counted here; the gaps it leaves are repaired.
    let overflowed = 0;
    const countOverflows = (): void => {
      const dropped = feed.upstream.skipped?.() ?? 0;
      if (dropped > overflowed) m.upstreamQueueOverflowsTotal.inc({}, dropped - overflowed);
      overflowed = dropped;
    };
    // With tracing on, a `relay.group` span per group: arrival to hand-over to subscribers.
    const tracer = activeTracer();
    for await (const group of feed.upstream.groups) {
      if (this.#ended) break;
      const span = tracer?.startSpan("relay.group", {
        kind: SpanKind.CONSUMER,
        root: true, // one trace per record, not one per upstream subscription
        attributes: recordAttributes(this.path, this.track, group.sequence),
      });
      countOverflows();
      let bytes = 0;
      for (const f of group.frames) bytes += f.byteLength;
      this.#countBytes(feed, bytes);
      if (group.live) void this.#countRest(feed, group.sequence, group.live, bytes);
      // A late group (retransmitted after newer ones) is taken too; a duplicate is refused,
      // which is also what keeps the old and the new upstream of a switch from doubling up.
      // A group still arriving goes to subscribers at once and grows in the ring.
      this.producer.writeGroup(
        group.sequence,
        group.live ?? group.frames,
        stamped(group.exactTimestamp ?? group.timestamp),
      );
      // After a switch, what the old route did not deliver will not come late from it.
      this.#repair.received(group.sequence, feed.switched);
      feed.switched = false;
      span?.setAttributes({
        "moq.group.bytes": bytes,
        "moq.subscribers": this.#subscribers,
        "sluice.relay.upstream": feed.source.remote,
      });
      span?.end();
    }
    countOverflows();
  }

  #countBytes(feed: Feed, bytes: number): void {
    this.#opts.metrics.ingressBytesTotal.inc(this.#trackLabel, bytes);
    feed.meter?.add(bytes);
  }

  // The frames of a cut-through group after its first, counted once it ended. One its
  // publisher abandoned (a reset, or its upstream session ended while it arrived) is not held
  // (see TrackProducer.holds); on a flow-controlled track it is
  // repaired like a group that never came, from an upstream that has it whole. A media
  // publisher abandons groups on purpose, most often on a congested link: asking for them again
  // would only add FETCHes there, each answered "not found".
  async #countRest(feed: Feed, sequence: number, live: LiveFrames, counted: number): Promise<void> {
    await ended(live);
    if (live.bytes > counted) this.#countBytes(feed, live.bytes - counted);
    if (live.state === "reset" && !this.#ended && this.#everyGroup) {
      this.#repair.abandoned(sequence);
    }
  }

  // Nobody is left to serve: after a grace period, the relay is told (it releases the upstream).
  #arm(): void {
    if (this.#ended || this.#idle !== undefined) return;
    const ms = this.#opts.idleMs ?? 5000;
    this.#idle = (this.#opts.timers ?? systemTimers).setTimeout(() => {
      this.#idle = undefined;
      if (this.#subscribers === 0) void this.#events.push({ kind: "idle" });
    }, ms);
  }

  #disarm(): void {
    if (this.#idle !== undefined) (this.#opts.timers ?? systemTimers).clearTimeout(this.#idle);
    this.#idle = undefined;
  }

  /** Ends the distributor: upstream is released and every subscriber finishes. */
  close(): void {
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#disarm();
    this.#repair.stop();
    if (this.#feed) closeQuietly(this.#feed.upstream);
    this.producer.close();
    this.#events.end();
  }
}
