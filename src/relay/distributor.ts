import { errorText } from "../errors/mod.ts";
import { type GroupFetcher, type TrackInfo, TrackProducer } from "../moq/mod.ts";
import type { RelayMetrics } from "./relay_metrics.ts";
import type { RouteSource } from "./route_table.ts";

/** A complete group received from upstream. */
export interface IncomingGroup {
  /** The publisher's group sequence. */
  readonly sequence: number;
  /** The group's frames, in order. */
  readonly frames: readonly Uint8Array[];
  /** The group's timestamp in the track timescale, when the publisher sent one. */
  readonly timestamp?: number;
  /** The same timestamp, exact (a nanosecond timescale exceeds 2^53). */
  readonly exactTimestamp?: bigint;
}

/** The relay's one upstream subscription for a track. */
export interface UpstreamTrack {
  /** Complete groups as they arrive; ends when the track or the publisher ends. */
  readonly groups: AsyncIterable<IncomingGroup>;
  /** Cancels the upstream subscription. */
  close(): void;
  /** Groups being received right now (fill tasks), when the source can tell. */
  inflight?(): number;
  /** The first group the publisher said it delivers (lite-05 SUBSCRIBE_START), once known. */
  startGroup?(): number | undefined;
  /** The track's properties as the publisher gave them (TRACK_INFO), passed on downstream. */
  readonly info?: TrackInfo | undefined;
}

/** Options of a {@link TrackDistributor}. */
export interface DistributorOptions {
  /** Broadcast path, without a leading slash. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Groups kept in the ring (GROUP_CACHE_SIZE). */
  readonly cacheSize: number;
  /** The upstream track's properties, advertised as they are (its timescale above all). */
  readonly info?: TrackInfo | undefined;
  /** Where a FETCH the ring cannot answer goes (the broadcast's upstream, see fetch_forward.ts). */
  readonly fetchMissing?: GroupFetcher;
  /** Metrics to update. */
  readonly metrics: RelayMetrics;
  /** Clock in ms (injected). */
  readonly now: () => number;
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
  /** The group the switch asked to continue from; undefined for the first upstream. */
  readonly expected: number | undefined;
  /** Whether the first group was checked for groups the switch could not recover. */
  checked: boolean;
  /** True once its read loop finished. */
  done: boolean;
}

/** Groups between the last one received and a new upstream's first that are counted one by one. */
const GAP_SCAN_LIMIT = 4096;

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
 * the new route from the group after the latest one received and only then
 * releases the old upstream, so subscribers keep their subscription: the ring
 * takes each sequence once, whichever upstream delivers it, and a group that
 * neither delivers is counted as a skip.
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
        delivered: (group) => {
          egress(group.size);
          delivery(Math.max(0, this.#opts.now() - group.writtenAt) / 1000);
        },
        skipped: () => m.subscriberSkipsTotal.inc(),
      },
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
    this.#begin({ upstream, source, expected: undefined, checked: true, done: false });
  }

  /**
   * Moves the upstream subscription to `source` (the broadcast's new route):
   * subscribes there from the group after the latest received, then releases
   * the old one. If the new route refuses, a still-running old upstream is
   * kept; otherwise the distributor ends.
   */
  async switchTo(source: RouteSource): Promise<void> {
    const open = this.#opts.open;
    if (this.#ended || this.#target === source || !open) return;
    this.#target = source;
    const latest = this.producer.latest;
    const expected = latest === undefined ? undefined : latest + 1;
    let upstream: UpstreamTrack;
    try {
      upstream = await open(source, expected);
    } catch (e) {
      if (this.#ended || this.#target !== source) return;
      const old = this.#feed;
      this.#opts.log?.(
        `relay: /${this.path}/${this.track} cannot move to ${source.remote}: ${errorText(e)}`,
      );
      if (old && !old.done) this.#target = old.source;
      else this.#end();
      return;
    }
    if (this.#ended || this.#target !== source) {
      upstream.close();
      return;
    }
    this.#begin({ upstream, source, expected, checked: expected === undefined, done: false });
  }

  #begin(feed: Feed): void {
    const old = this.#feed;
    this.#feed = feed;
    if (old) closeQuietly(old.upstream);
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
    for await (const group of feed.upstream.groups) {
      if (this.#ended) break;
      if (!feed.checked) {
        feed.checked = true;
        this.#countGap(feed, group.sequence);
      }
      let bytes = 0;
      for (const f of group.frames) bytes += f.byteLength;
      m.ingressBytesTotal.inc(this.#trackLabel, bytes);
      this.#opts.onBytes?.(feed.source, bytes);
      // A late group (retransmitted after newer ones) is taken too; a duplicate is refused,
      // which is also what keeps the old and the new upstream of a switch from doubling up.
      const timestamp = group.exactTimestamp ?? group.timestamp;
      this.producer.writeGroup(
        group.sequence,
        group.frames,
        timestamp === undefined || timestamp === 0 || timestamp === 0n ? {} : { timestamp },
      );
    }
  }

  // Groups from where the switch asked to continue up to the new upstream's first, that
  // neither upstream delivered, are lost to every subscriber: count them as skips.
  #countGap(feed: Feed, firstSequence: number): void {
    const expected = feed.expected;
    if (expected === undefined) return;
    const first = Math.min(firstSequence, feed.upstream.startGroup?.() ?? Infinity);
    const span = first - expected;
    if (span <= 0) return;
    let missing = span;
    if (span <= GAP_SCAN_LIMIT) {
      missing = 0;
      for (let s = expected; s < first; s++) if (!this.producer.has(s)) missing++;
    }
    if (missing === 0) return;
    this.#opts.metrics.subscriberSkipsTotal.inc({}, missing);
    this.#opts.log?.(
      `relay: /${this.path}/${this.track}: ${missing} group(s) before ${first} could not be ` +
        `recovered through ${feed.source.remote}`,
    );
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
    if (this.#feed) closeQuietly(this.#feed.upstream);
    this.producer.close();
    this.#opts.onEnd?.();
  }
}

function closeQuietly(upstream: UpstreamTrack): void {
  try {
    upstream.close();
  } catch {
    // Upstream already gone.
  }
}
