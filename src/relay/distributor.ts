import { type GroupFetcher, type TrackInfo, TrackProducer } from "../moq/mod.ts";
import type { RelayMetrics } from "./relay_metrics.ts";

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
  /** Called with each group's size as it arrives (route bitrate). */
  readonly onBytes?: (bytes: number) => void;
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

/**
 * Fans one upstream track out to every downstream subscriber. Upstream
 * groups go into a ring of the most recent GROUP_CACHE_SIZE complete groups
 * (a TrackProducer); each subscriber's session reads it through its own
 * cursor, so a slow subscriber never holds back the upstream reader or the
 * others, starts at the latest group, and when it falls behind the ring is
 * skipped forward to the latest group.
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
  #upstream: UpstreamTrack | undefined;
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
    this.producer = new TrackProducer({
      ...options.info,
      cache: options.cacheSize,
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
        delivered: (group) => {
          m.egressBytesTotal.inc(this.#trackLabel, group.size);
          m.groupDeliverySeconds.observe(
            this.#trackLabel,
            Math.max(0, this.#opts.now() - group.writtenAt) / 1000,
          );
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
    return this.#upstream?.inflight?.() ?? 0;
  }

  /** Label of this track on metrics whose only track label is `track`. */
  get trackLabel(): string {
    return this.#trackLabel.track;
  }

  /** Starts reading the upstream track. */
  start(upstream: UpstreamTrack): void {
    if (this.#ended) {
      upstream.close();
      return;
    }
    this.#upstream = upstream;
    if (this.#subscribers === 0) this.#arm();
    this.#read(upstream).then(() => this.#end(), (e) => {
      this.#opts.log?.(`relay: upstream of /${this.path}/${this.track} failed: ${e}`);
      this.#end();
    });
  }

  async #read(upstream: UpstreamTrack): Promise<void> {
    const m = this.#opts.metrics;
    for await (const group of upstream.groups) {
      if (this.#ended) break;
      let bytes = 0;
      for (const f of group.frames) bytes += f.byteLength;
      m.ingressBytesTotal.inc(this.#trackLabel, bytes);
      this.#opts.onBytes?.(bytes);
      // A late group (retransmitted after newer ones) is taken too; a duplicate is refused.
      const timestamp = group.exactTimestamp ?? group.timestamp;
      this.producer.writeGroup(
        group.sequence,
        group.frames,
        timestamp === undefined || timestamp === 0 || timestamp === 0n ? {} : { timestamp },
      );
    }
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
    try {
      this.#upstream?.close();
    } catch {
      // Upstream already gone.
    }
    this.producer.close();
    this.#opts.onEnd?.();
  }
}
