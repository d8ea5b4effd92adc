import { prefixCovers } from "../path/mod.ts";
import type { RelayMetrics } from "./relay_metrics.ts";
import type { UpstreamTrack } from "./distributor.ts";
import type { UpstreamFetch } from "./fetch_forward.ts";
import { RateMeter } from "./rate_meter.ts";

/** What a publisher's session offers the relay for one broadcast. */
export interface RouteSource {
  /** The publisher's address, `host:port`. */
  readonly remote: string;
  /** Hops to the origin (0: the publisher is connected here). */
  readonly hops: number;
  /** Hop ids of the announcement (moq loop detection), passed on to subscribers. */
  readonly hopIds?: readonly bigint[];
  /** Opens the relay's upstream subscription to one track of the broadcast. */
  subscribe(track: string): Promise<UpstreamTrack>;
  /** Fetches one group of a track from the source (FETCHes the relay's ring cannot answer). */
  fetch?: UpstreamFetch;
  /** Smoothed RTT to the source in ms, when measured. */
  rttMs?(): number | undefined;
}

/** A broadcast route as the relay holds it. */
export interface Route {
  /** Broadcast path without a leading slash. */
  readonly path: string;
  /** The selected source. */
  readonly source: RouteSource;
  /** When the route was announced (ms). */
  readonly announcedAt: number;
  /** When the route last changed (ms). */
  lastUpdated: number;
  /** Ingress rate of the route's tracks. */
  readonly rate: RateMeter;
}

/** An announcement event for watchers. */
export interface AnnounceEvent {
  /** Broadcast path without a leading slash. */
  readonly path: string;
  /** True when the broadcast became available, false when it ended. */
  readonly active: boolean;
}

/** A live announcement held by a publisher; `end()` withdraws it. */
export interface Announcement {
  /** True when this candidate is the active route now (false: retained as an alternate). */
  readonly active: boolean;
  /** Withdraws the announcement (the publisher ended it or went away). */
  end(): void;
}

interface Candidate {
  source: RouteSource;
  announcedAt: number;
  ended: boolean;
}

/**
 * One route per broadcast path. A second announcement of an active path is
 * not better (same hop count) and is retained as an alternate, promoted when
 * the incumbent's announcement ends; a strictly better one (fewer hops)
 * replaces it.
 */
export class RouteTable {
  readonly #routes = new Map<string, Route>();
  readonly #alternates = new Map<string, Candidate[]>();
  readonly #incumbent = new Map<string, Candidate>();
  readonly #watchers = new Set<{ prefix: string; fn: (e: AnnounceEvent) => void }>();
  readonly #endListeners = new Set<(path: string) => void>();
  readonly #metrics: RelayMetrics;
  readonly #now: () => number;

  /** Creates an empty table. */
  constructor(metrics: RelayMetrics, now: () => number) {
    this.#metrics = metrics;
    this.#now = now;
  }

  /** The active route of `path`. */
  get(path: string): Route | undefined {
    return this.#routes.get(path);
  }

  /** Every active route. */
  routes(): Route[] {
    return [...this.#routes.values()];
  }

  /** Number of retained alternates across all paths. */
  get retained(): number {
    let n = 0;
    for (const l of this.#alternates.values()) n += l.length;
    return n;
  }

  /** Calls `fn` whenever the active route of a path ends or is replaced (its distributors must end). */
  onRouteEnd(fn: (path: string) => void): () => void {
    this.#endListeners.add(fn);
    return () => this.#endListeners.delete(fn);
  }

  /** Watches announcements under `prefix`; `fn` first receives every active path. */
  watch(prefix: string, fn: (e: AnnounceEvent) => void): () => void {
    const w = { prefix, fn };
    this.#watchers.add(w);
    for (const p of this.#routes.keys()) if (prefixCovers(prefix, p)) fn({ path: p, active: true });
    return () => this.#watchers.delete(w);
  }

  #emit(e: AnnounceEvent): void {
    for (const w of this.#watchers) {
      if (!prefixCovers(w.prefix, e.path)) continue;
      try {
        w.fn(e);
      } catch {
        // A watcher's failure is its own.
      }
    }
  }

  #install(path: string, c: Candidate): void {
    const now = this.#now();
    this.#incumbent.set(path, c);
    this.#routes.set(path, {
      path,
      source: c.source,
      announcedAt: c.announcedAt,
      lastUpdated: now,
      rate: new RateMeter(this.#now),
    });
  }

  #endRoute(path: string): void {
    for (const fn of this.#endListeners) fn(path);
  }

  #syncGauges(): void {
    this.#metrics.broadcastsActive.set({}, this.#routes.size);
    this.#metrics.routesRetained.set({}, this.retained);
  }

  /** Offers a publisher's broadcast as a route for `path`. */
  announce(path: string, source: RouteSource): Announcement {
    const m = this.#metrics;
    const c: Candidate = { source, announcedAt: this.#now(), ended: false };
    const current = this.#incumbent.get(path);
    let active: boolean;
    if (current === undefined) {
      this.#install(path, c);
      this.#emit({ path, active: true });
      active = true;
    } else if (source.hops < current.source.hops) {
      m.routeReplacementsTotal.inc();
      this.#endRoute(path);
      this.#retain(path, current);
      this.#install(path, c);
      // Subscribers re-subscribe when they see the broadcast end and return.
      this.#emit({ path, active: false });
      this.#emit({ path, active: true });
      active = true;
    } else {
      m.routeRejectionsTotal.inc({ reason: "not_better" });
      this.#retain(path, c);
      active = false;
    }
    this.#syncGauges();
    return {
      get active(): boolean {
        return active;
      },
      end: () => {
        if (c.ended) return;
        c.ended = true;
        active = false;
        this.#withdraw(path, c);
      },
    };
  }

  #retain(path: string, c: Candidate): void {
    const list = this.#alternates.get(path) ?? [];
    list.push(c);
    list.sort((a, b) => a.source.hops - b.source.hops);
    this.#alternates.set(path, list);
  }

  #withdraw(path: string, c: Candidate): void {
    const list = this.#alternates.get(path);
    if (this.#incumbent.get(path) !== c) {
      if (list) {
        const i = list.indexOf(c);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.#alternates.delete(path);
      }
      this.#syncGauges();
      return;
    }
    this.#incumbent.delete(path);
    this.#routes.delete(path);
    this.#endRoute(path);
    const next = list?.shift();
    if (list && list.length === 0) this.#alternates.delete(path);
    if (next) {
      this.#metrics.routePromotionsTotal.inc();
      this.#install(path, next);
      this.#emit({ path, active: false });
      this.#emit({ path, active: true });
    } else {
      this.#emit({ path, active: false });
    }
    this.#syncGauges();
  }
}
