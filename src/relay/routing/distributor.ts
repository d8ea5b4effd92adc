import { errorText } from "../../error_text/mod.ts";
import {
  type GroupFetcher,
  type LiveFrames,
  type TrackInfo,
  TrackProducer,
} from "../../moq/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { activeTracer, recordAttributes, SpanKind } from "../../tracing/mod.ts";
import { GapRepair } from "./gap_repair.ts";
import type { Timers } from "../../timers/mod.ts";
import type { RouteSource } from "./route_table.ts";
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
  /** Called with each group's size as it arrives and the source it came through (route bitrate). */
  readonly onBytes?: (source: RouteSource, bytes: number) => void;
  /** Opens an upstream subscription through another route, from group `start` ({@link TrackDistributor.switchTo}). */
  readonly open?: (source: RouteSource, start: number | undefined) => Promise<UpstreamTrack>;
  /**
   * The current upstream ended by itself (the publisher finished the track,
   * or its session went away): the relay decides whether to switch routes or
   * {@link TrackDistributor.close}. Without it the distributor ends.
   */
  readonly onUpstreamEnd?: (source: RouteSource) => void;
  /** Called once when the distributor ended (upstream gone, or no subscribers left). */
  readonly onEnd?: () => void;
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
 * When the broadcast's route changes, {@link switchTo} subscribes through
 * the new route from the lowest group not received and releases the old
 * upstream only once the new one answered, so subscribers keep their
 * subscription: the ring takes each sequence once, whichever upstream
 * delivers it.
 *
 * Gaps are repaired, not skipped: a sequence missing below the highest one
 * received (lost on a route change, dropped by an upstream that fell behind,
 * or late beyond GAP_REPAIR_WAIT_MS, see gap_repair.ts) is fetched through the route
 * (for a funnel's track that reaches its ledger) and written to the ring as
 * a late group, which every subscriber that has not skipped past it gets.
 * A gap that cannot be fetched counts once in `subscriber_skips_total`
 * (its subscribers skip forward over it), as does each subscriber that
 * falls behind and skips forward; repairs count in `group_repairs_total`.
 * The first group of a gap is fetched before the rest, so a route that
 * cannot fetch costs one request per gap.
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
  #feed: Feed | undefined;
  #target: RouteSource | undefined;
  readonly #repair: GapRepair;
  #subscribers = 0;
  #ended = false;
  #idle: ReturnType<typeof setTimeout> | undefined;

  /** Creates a distributor; call {@link start} with the upstream once it is available. */
  constructor(options: DistributorOptions) {
    this.#opts = options;
    this.path = options.path;
    this.track = options.track;
    this.#trackLabel = { track: `/${options.path}/${options.track}` };
    const m = options.metrics;
    const egress = m.egressBytesTotal.bind(this.#trackLabel);
    const delivery = m.groupDeliverySeconds.bind(this.#trackLabel);
    this.producer = new TrackProducer({
      ...options.info,
      cache: options.cacheSize,
      cacheMs: options.cacheMs ?? 0,
      cacheBytes: options.cacheBytes ?? Infinity,
      burstMs: GROUP_BURST_MS,
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

  /** The route the distributor reads from, or is switching to. */
  get source(): RouteSource | undefined {
    return this.#target;
  }

  /** Starts reading the first upstream subscription, opened through `source`. */
  start(upstream: UpstreamTrack, source: RouteSource): void {
    if (this.#ended) {
      upstream.close();
      return;
    }
    this.#target = source;
    this.#begin({ upstream, source, switched: false, done: false });
  }

  /**
   * Moves the upstream subscription to `source` (the broadcast's new route):
   * subscribes there from the lowest group not received (the one after the
   * latest when nothing is missing), and releases the old one once the new
   * one answered. If the new route refuses or does not answer, a
   * still-running old upstream is kept; otherwise the relay is told the
   * upstream ended ({@link DistributorOptions.onUpstreamEnd}).
   */
  async switchTo(source: RouteSource): Promise<void> {
    const open = this.#opts.open;
    if (this.#ended || this.#target === source || !open) return;
    this.#target = source;
    const latest = this.producer.latest;
    const from = this.#repair.firstMissing ?? (latest === undefined ? undefined : latest + 1);
    let upstream: UpstreamTrack;
    try {
      upstream = await open(source, from);
    } catch (e) {
      if (this.#ended || this.#target !== source) return;
      const old = this.#feed;
      this.#opts.log?.(
        `relay: /${this.path}/${this.track} cannot move to ${source.remote}: ${errorText(e)}`,
      );
      if (old && !old.done) this.#target = old.source;
      else if (this.#opts.onUpstreamEnd) this.#opts.onUpstreamEnd(source);
      else this.#end();
      return;
    }
    if (this.#ended || this.#target !== source) {
      upstream.close();
      return;
    }
    this.#begin({ upstream, source, switched: latest !== undefined, done: false });
  }

  #begin(feed: Feed): void {
    const old = this.#feed;
    this.#feed = feed;
    if (old) releaseWhenAnswered(old.upstream, old.done, feed.upstream);
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
    if (this.#opts.onUpstreamEnd) this.#opts.onUpstreamEnd(feed.source);
    else this.#end();
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
      if (group.live) void this.#countRest(feed, group.live, bytes);
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
    this.#opts.onBytes?.(feed.source, bytes);
  }

  // The frames of a cut-through group after its first, counted once it ended.
  async #countRest(feed: Feed, live: LiveFrames, counted: number): Promise<void> {
    await ended(live);
    if (live.bytes > counted) this.#countBytes(feed, live.bytes - counted);
  }

  // Nobody is left to serve: release the upstream subscription after a grace period.
  #arm(): void {
    if (this.#ended || this.#idle !== undefined) return;
    const ms = this.#opts.idleMs ?? 5000;
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      if (this.#subscribers === 0) this.#end();
    }, ms);
  }

  #disarm(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
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
    this.#opts.onEnd?.();
  }
}
