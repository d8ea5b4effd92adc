import { errorText } from "../../error_text/mod.ts";
import { MoqError, TrackProducer } from "../../moq/mod.ts";
import { type Timers, withDeadline } from "../../timers/mod.ts";
import {
  activeTracer,
  type Span,
  SpanKind,
  type SpanOptions,
  traced,
  trackAttributes,
} from "../../tracing/mod.ts";
import { TrackDistributor } from "./distributor.ts";
import type { UpstreamTrack } from "./upstream_track.ts";
import { forwardFetches, upstreamFetch } from "./fetch_forward.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { type RouteChange, type RouteSource, RouteTable } from "./route_table.ts";

/** Why a downstream subscription was refused. */
export class SubscribeError extends Error {
  /** Stable code, also the `code` label of subscribe_errors_total. */
  readonly code: "not_found" | "upstream_error" | "unauthorized";

  /** Creates the error. */
  constructor(code: SubscribeError["code"], message: string) {
    super(message);
    this.name = "SubscribeError";
    this.code = code;
  }
}

/**
 * Longest wait for an upstream TRACK or SUBSCRIBE to be answered, ms: a
 * peer that never answers fails the request (and its subscriber's) instead
 * of holding it, and a route switch to it, forever.
 */
export const UPSTREAM_ANSWER_MS = 5000;

/** The error of an upstream request that was not answered in time. */
function unanswered(what: string): () => MoqError {
  return () => new MoqError("closed", `${what}: no answer within ${UPSTREAM_ANSWER_MS / 1000} s`);
}

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
  readonly #distributors = new Map<string, TrackDistributor>();
  readonly #pending = new Map<string, Promise<TrackDistributor>>();
  readonly #asking = new Map<string, Promise<TrackProducer>>();
  readonly #opts: RelayCoreOptions;

  /** Creates the core and registers its live gauges with the metrics registry. */
  constructor(options: RelayCoreOptions) {
    this.#opts = options;
    this.routes = new RouteTable(options.metrics, options.now);
    this.routes.onChange((change) => this.#routeChanged(change));
    const m = options.metrics;
    m.registry.onCollect(() => {
      m.trackSubscriptionsActive.clear();
      m.bufferDepthGroups.clear();
      m.bufferBytes.clear();
      let subs = 0;
      let fills = 0;
      for (const d of this.#distributors.values()) {
        subs += d.subscriberCount;
        fills += d.fillsInflight;
        m.trackSubscriptionsActive.add({ path: `/${d.path}`, track: d.track }, d.subscriberCount);
        m.bufferDepthGroups.add({ track: d.trackLabel }, d.depth);
        m.bufferBytes.add({ track: d.trackLabel }, d.producer.cachedBytes);
      }
      m.subscribersActive.set({}, subs);
      m.groupFillsInflight.set({}, fills);
    });
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
    const key = JSON.stringify([path, track]);
    const labels = { path: `/${path}`, track };
    const existing = this.#distributors.get(key);
    if (existing && !existing.ended) {
      span?.setAttribute("sluice.relay.shared", true);
      if (count) m.trackDistributorReusesTotal.inc(labels);
      return existing.producer;
    }
    const fail = (e: unknown): never => {
      if (countErrors) {
        m.subscribeErrorsTotal.inc({
          code: e instanceof SubscribeError ? e.code : "upstream_error",
        });
      }
      throw e;
    };
    const inflight = this.#pending.get(key);
    if (inflight) {
      span?.setAttribute("sluice.relay.shared", true);
      if (count) m.trackDistributorReusesTotal.inc(labels);
      try {
        return (await inflight).producer;
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
   * publisher's timescale passes through, without subscribing upstream yet.
   */
  #properties(
    path: string,
    track: string,
    key: string,
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
        (info) => new TrackProducer({ ...info, cache: 1 }),
        (e: unknown) => Promise.reject(upstreamFailure(path, track, e)),
      ).finally(() => this.#asking.delete(key));
      this.#asking.set(key, pending);
    }
    return pending;
  }

  // An upstream subscription through `source`, counted and timed.
  async #subscribe(
    path: string,
    track: string,
    source: RouteSource,
    start: number | undefined,
  ): Promise<UpstreamTrack> {
    const m = this.#opts.metrics;
    const labels = { path: `/${path}`, track };
    m.trackUpstreamRequestsTotal.inc(labels);
    const started = this.#opts.now();
    try {
      return await traced(
        "relay.upstream.subscribe",
        upstreamSpan(path, track, source, start),
        () =>
          withDeadline(
            source.subscribe(track, start === undefined ? {} : { start }),
            UPSTREAM_ANSWER_MS,
            unanswered(`SUBSCRIBE to "${path}/${track}" through ${source.remote}`),
            (late) => late.close(),
          ),
      );
    } catch (e) {
      m.trackUpstreamRequestErrorsTotal.inc(labels);
      throw upstreamFailure(path, track, e);
    } finally {
      m.trackUpstreamRequestDurationSeconds.observe(labels, (this.#opts.now() - started) / 1000);
    }
  }

  async #open(
    path: string,
    track: string,
    key: string,
    source: RouteSource,
    start: number | undefined,
  ): Promise<TrackDistributor> {
    const upstream = await this.#subscribe(path, track, source, start);
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
      onBytes: (from, n) => this.routes.delivered(path, from, n),
      open: (to, from) => this.#subscribe(path, track, to, from),
      onUpstreamEnd: (from) => this.#upstreamEnded(d, from),
      onEnd: () => {
        if (this.#distributors.get(key) === d) this.#distributors.delete(key);
      },
      ...(this.#opts.idleMs !== undefined ? { idleMs: this.#opts.idleMs } : {}),
      ...(this.#opts.log ? { log: this.#opts.log } : {}),
    });
    this.#distributors.set(key, d);
    d.start(upstream, source);
    return d;
  }

  #routeChanged(change: RouteChange): void {
    if (change.kind === "updated") return;
    for (const d of [...this.#distributors.values()]) {
      if (d.path !== change.path) continue;
      if (change.kind === "ended") this.#linger(d, change.previous);
      else if (d.source !== change.route.source) void d.switchTo(change.route.source);
    }
  }

  /**
   * The broadcast has no route through `from` any more: keep the track (and
   * its subscribers) for a moment in case the broadcast comes back another
   * way — a publisher following GOAWAY to another relay, the route table
   * promoting after a session died — and end it if it does not.
   */
  #linger(d: TrackDistributor, from: RouteSource): void {
    const stop = this.routes.onChange((c) => {
      if (c.path !== d.path || c.kind === "ended") return;
      clearTimeout(timer);
      stop();
    });
    const timer = setTimeout(() => {
      stop();
      if (!d.ended && d.source === from) d.close();
    }, this.#opts.orphanMs);
  }

  /**
   * A distributor's upstream ended by itself. Through a route that is no
   * longer selected: follow the selected one. Through a session that went
   * away, or with no route left: wait briefly for the broadcast to move
   * ({@link #linger}). Otherwise the publisher finished the track: it ends.
   */
  #upstreamEnded(d: TrackDistributor, from: RouteSource): void {
    const route = this.routes.get(d.path);
    if (route !== undefined && route.source !== from) return void d.switchTo(route.source);
    if (route === undefined || from.alive?.() === false) return this.#linger(d, from);
    d.close();
  }

  /** Ends every distributor (relay shutdown). */
  close(): void {
    for (const d of [...this.#distributors.values()]) d.close();
  }
}

/** The span options of an upstream SUBSCRIBE through `source`. */
function upstreamSpan(
  path: string,
  track: string,
  source: RouteSource,
  start: number | undefined,
): SpanOptions {
  return {
    kind: SpanKind.CLIENT,
    attributes: {
      ...trackAttributes(path, track),
      "sluice.relay.upstream": source.remote,
      ...(start === undefined ? {} : { "moq.subscribe.start": start }),
    },
  };
}

/** What a failed upstream request means for the downstream one. */
function upstreamFailure(path: string, track: string, e: unknown): SubscribeError {
  const notFound = e instanceof Error && "kind" in e && e.kind === "not-found";
  return new SubscribeError(
    notFound ? "not_found" : "upstream_error",
    `Upstream request for "${path}/${track}" failed: ${errorText(e)}`,
  );
}
