import { errorText } from "../../error_text/mod.ts";
import { TrackProducer } from "../../moq/mod.ts";
import { systemTimers, type Timers, withDeadline } from "../../timers/mod.ts";
import { activeTracer, type Span, SpanKind, traced, trackAttributes } from "../../tracing/mod.ts";
import { TrackDistributor } from "./distributor.ts";
import { servedInfo } from "./flow_control.ts";
import { lingerOrphan } from "./orphan_wait.ts";
import type { SwitchStart } from "./track_event.ts";
import { collectTrackGauges, forgetTrackSeries } from "./track_series.ts";
import type { UpstreamTrack } from "./upstream_track.ts";
import { forwardFetches, upstreamFetch } from "./fetch_forward.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { type RouteChange, type RouteSource, RouteTable } from "./route_table.ts";
import { type TrackKey, trackKey } from "./track_key.ts";
import {
  SubscribeError,
  subscribeUpstream,
  unanswered,
  UPSTREAM_ANSWER_MS,
  upstreamFailure,
} from "./upstream_request.ts";

/** What TRACK is answered with when the route's source cannot tell the track's properties. */
const DEFAULT_PROPERTIES = new TrackProducer();

/** Options of {@link RelayCore}. */
export interface RelayCoreOptions {
  /** Metrics to update. */
  readonly metrics: RelayMetrics;
  /** GROUP_CACHE_SIZE. */
  readonly cacheSize: number;
  /** RELAY_CACHE_MS (0: no age limit). */
  readonly cacheMs?: number;
  /** RELAY_CACHE_BYTES (default: no limit). */
  readonly cacheBytes?: number;
  /** Clock in ms. */
  readonly now: () => number;
  /** Timers of gap repair's waits and retries (default the global ones; tests pass faster ones). */
  readonly repairTimers?: Timers;
  /** Timers of the orphan wait and each track's idle release (default the system's). */
  readonly timers?: Timers;
  /** How long a track's upstream is kept with no subscriber, ms (default 5000). */
  readonly idleMs?: number;
  /**
   * How long a track whose route ended, or whose upstream session went
   * away, waits for the broadcast to come back by another route before it
   * ends, ms (the relay passes RELAY_PUBLISHER_GRACE_MS).
   */
  readonly orphanMs: number;
  /** Logs a line. */
  readonly log?: (line: string) => void;
}

/**
 * Routing and fan-out, independent of any transport: sessions announce
 * into the route table, subscribers are served from one shared distributor
 * per track, which holds the single upstream subscription and follows the
 * broadcast's route when it changes.
 */
export class RelayCore {
  /** The route table (one route per broadcast). */
  readonly routes: RouteTable;
  readonly #distributors = new Map<TrackKey, TrackDistributor>();
  readonly #pending = new Map<TrackKey, Promise<TrackDistributor>>();
  readonly #asking = new Map<TrackKey, Promise<TrackProducer>>();
  readonly #opts: RelayCoreOptions;

  /** Creates the core and registers its live gauges with the metrics registry. */
  constructor(options: RelayCoreOptions) {
    this.#opts = options;
    // A publisher restarting within the subscribers' grace also gets its paths back.
    this.routes = new RouteTable(options.metrics, options.now, { graceMs: options.orphanMs });
    this.routes.onChange((change) => this.#routeChanged(change));
    collectTrackGauges(options.metrics, () => this.#distributors.values());
  }

  /** Live distributors (for tests and diagnostics). */
  distributors(): TrackDistributor[] {
    return [...this.#distributors.values()];
  }

  /**
   * {@link #source}, in a `relay.subscribe`, `relay.track` or `relay.fetch`
   * span when tracing is on. Throws {@link SubscribeError}.
   */
  source(
    path: string,
    track: string,
    kind: "subscribe" | "track" | "fetch" = "subscribe",
    start?: number,
  ): Promise<TrackProducer> {
    if (!activeTracer()) return this.#source(path, track, kind, start);
    const attributes = {
      ...trackAttributes(path, track),
      ...(start === undefined ? {} : { "moq.subscribe.start": start }),
    };
    return traced(
      `relay.${kind}`,
      { kind: SpanKind.SERVER, attributes },
      (span) => this.#source(path, track, kind, start, span),
    );
  }

  /**
   * The source to serve `path`/`track` from, starting the shared upstream
   * subscription (from group `start`, when the request names one) if none
   * exists. `kind` is the request: reuses are counted for SUBSCRIBE only,
   * failures for SUBSCRIBE and lite-05's TRACK (which precedes it), neither
   * for FETCH. A TRACK does not start the upstream subscription: the
   * SUBSCRIBE that follows does, with its start, so a relay continuing a
   * track through this one gets the groups it asks for. Throws
   * {@link SubscribeError}.
   */
  async #source(
    path: string,
    track: string,
    kind: "subscribe" | "track" | "fetch",
    start: number | undefined,
    span?: Span,
  ): Promise<TrackProducer> {
    const m = this.#opts.metrics;
    const count = kind === "subscribe";
    const countErrors = kind !== "fetch";
    const fail = (e: unknown): never => {
      if (countErrors) {
        m.subscribeErrorsTotal.inc({
          code: e instanceof SubscribeError ? e.code : "upstream_error",
        });
      }
      throw e;
    };
    let key: TrackKey;
    try {
      key = trackKey(path, track);
    } catch (e) {
      // No session can name it: there is no such track.
      return fail(new SubscribeError("not_found", errorText(e)));
    }
    const labels = { path: `/${path}`, track };
    const existing = this.#distributors.get(key);
    if (existing && !existing.ended) {
      span?.setAttribute("sluice.relay.shared", true);
      if (count) m.trackDistributorReusesTotal.inc(labels);
      return existing.producer;
    }
    const inflight = this.#pending.get(key);
    if (inflight) {
      span?.setAttribute("sluice.relay.shared", true);
      try {
        const d = await inflight;
        // Counted once admitted: a refused track makes no series of its own.
        if (count) m.trackDistributorReusesTotal.inc(labels);
        return d.producer;
      } catch (e) {
        return fail(e);
      }
    }
    const route = this.routes.get(path);
    if (route === undefined) {
      return fail(new SubscribeError("not_found", `No broadcast "${path}" is announced`));
    }
    if (kind === "track") {
      try {
        return await this.#properties(path, track, key, route.source);
      } catch (e) {
        return fail(e);
      }
    }
    const setup = this.#open(path, track, key, route.source, start);
    this.#pending.set(key, setup);
    try {
      return (await setup).producer;
    } catch (e) {
      return fail(e);
    } finally {
      this.#pending.delete(key);
    }
  }

  /**
   * The track's properties for a TRACK that precedes the first SUBSCRIBE:
   * asked of the route's source (one request for concurrent askers), so the
   * publisher's timescale passes through, without subscribing upstream yet;
   * served as the distributor will serve them ({@linkcode servedInfo}).
   */
  #properties(
    path: string,
    track: string,
    key: TrackKey,
    source: RouteSource,
  ): Promise<TrackProducer> {
    const asked = source.trackInfo;
    if (!asked) return Promise.resolve(DEFAULT_PROPERTIES);
    let pending = this.#asking.get(key);
    if (!pending) {
      pending = withDeadline(
        asked.call(source, track),
        UPSTREAM_ANSWER_MS,
        unanswered(`TRACK of "${path}/${track}" from ${source.remote}`),
      ).then(
        (info) => new TrackProducer({ ...servedInfo(info), cache: 1 }),
        (e: unknown) => Promise.reject(upstreamFailure(path, track, e)),
      ).finally(() => this.#asking.delete(key));
      this.#asking.set(key, pending);
    }
    return pending;
  }

  async #open(
    path: string,
    track: string,
    key: TrackKey,
    source: RouteSource,
    start: number | undefined,
  ): Promise<TrackDistributor> {
    const upstream = await subscribeUpstream(
      this.#opts.metrics,
      this.#opts.now,
      path,
      track,
      source,
      start,
    );
    if (this.routes.get(path)?.source !== source) {
      // The route ended or moved while the upstream request was in flight.
      upstream.close();
      throw new SubscribeError("not_found", `Broadcast "${path}" ended`);
    }
    const d: TrackDistributor = new TrackDistributor({
      path,
      track,
      cacheSize: this.#opts.cacheSize,
      ...(this.#opts.cacheMs !== undefined ? { cacheMs: this.#opts.cacheMs } : {}),
      ...(this.#opts.cacheBytes !== undefined ? { cacheBytes: this.#opts.cacheBytes } : {}),
      info: upstream.info,
      // A FETCH the ring cannot answer goes to whichever route the broadcast has then.
      fetchMissing: forwardFetches(() => upstreamFetch(this.routes.get(path)?.source), track, {
        broadcast: path,
      }),
      metrics: this.#opts.metrics,
      now: this.#opts.now,
      ...(this.#opts.repairTimers ? { repairTimers: this.#opts.repairTimers } : {}),
      ...(this.#opts.timers ? { timers: this.#opts.timers } : {}),
      ...(this.#opts.idleMs !== undefined ? { idleMs: this.#opts.idleMs } : {}),
      ...(this.#opts.log ? { log: this.#opts.log } : {}),
    });
    this.#distributors.set(key, d);
    d.start(upstream, source, this.routes.meter(path, source));
    void this.#follow(key, d);
    return d;
  }

  /**
   * Acts on what happens to a track until it ended: an idle track is ended,
   * an upstream that ended is followed ({@link #upstreamEnded}).
   */
  async #follow(key: TrackKey, d: TrackDistributor): Promise<void> {
    for await (const e of d.events) {
      if (e.kind === "upstream-ended") this.#upstreamEnded(d, e.source);
      else if (d.subscriberCount === 0) this.#end(d, key); // idle, and nobody came back since
    }
    this.#end(d, key); // closed from elsewhere (a test, shutdown)
  }

  /** Ends a track: its distributor closes, and it leaves the table and /metrics at once. */
  #end(d: TrackDistributor, key = trackKey(d.path, d.track)): void {
    d.close();
    if (this.#distributors.get(key) !== d) return;
    this.#distributors.delete(key);
    forgetTrackSeries(this.#opts.metrics, d);
  }

  /**
   * Moves a track's upstream subscription to `source`, the broadcast's new
   * route: subscribes there from the lowest group not received, and hands
   * the upstream to the distributor, which releases the old one once the new
   * one answered. If the new route refuses or does not answer, a
   * still-running old upstream is kept; otherwise the upstream has ended.
   */
  async #switch(d: TrackDistributor, source: RouteSource): Promise<void> {
    const start: SwitchStart | undefined = d.retarget(source);
    if (!start) return;
    let upstream: UpstreamTrack;
    try {
      upstream = await subscribeUpstream(
        this.#opts.metrics,
        this.#opts.now,
        d.path,
        d.track,
        source,
        start.start,
      );
    } catch (e) {
      if (!d.targets(source)) return;
      this.#opts.log?.(
        `relay: /${d.path}/${d.track} cannot move to ${source.remote}: ${errorText(e)}`,
      );
      if (!d.fallBack()) this.#upstreamEnded(d, source);
      return;
    }
    d.feed(upstream, source, start, this.routes.meter(d.path, source));
  }

  #routeChanged(change: RouteChange): void {
    if (change.kind === "updated") return;
    for (const d of [...this.#distributors.values()]) {
      if (d.path !== change.path) continue;
      if (change.kind === "ended") this.#linger(d, change.previous);
      else if (d.source !== change.route.source) void this.#switch(d, change.route.source);
    }
  }

  // No route through `from` any more: the track waits for the broadcast to come back (orphan_wait).
  #linger(d: TrackDistributor, from: RouteSource): void {
    const timers = this.#opts.timers ?? systemTimers;
    lingerOrphan(this.routes, d, from, this.#opts.orphanMs, timers, () => this.#end(d));
  }

  /**
   * A distributor's upstream ended by itself. Through a route that is no
   * longer selected: follow the selected one. Through a session that went
   * away, or with no route left: wait briefly for the broadcast to move
   * ({@link #linger}). Otherwise the publisher finished the track: it ends.
   */
  #upstreamEnded(d: TrackDistributor, from: RouteSource): void {
    const route = this.routes.get(d.path);
    if (route !== undefined && route.source !== from) return void this.#switch(d, route.source);
    if (route === undefined || from.alive?.() === false) return this.#linger(d, from);
    this.#end(d);
  }

  /** Ends every distributor (relay shutdown). */
  close(): void {
    for (const d of [...this.#distributors.values()]) this.#end(d);
    this.routes.close();
  }
}
