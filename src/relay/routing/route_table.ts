import type { TrackInfo } from "../../moq/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { UpstreamTrack } from "./upstream_track.ts";
import type { UpstreamFetch } from "./fetch_forward.ts";
import type { Timers } from "../../timers/mod.ts";
import { RateMeter } from "../metrics/mod.ts";
import { compareRoutes, type RouteStats } from "./route_election.ts";
import { RouteOwners } from "./route_owners.ts";

/** Announcements of one path by identities that do not own it, kept waiting at most. */
export const MAX_WAITING_PER_PATH = 4;

/** Options of {@linkcode RouteTable}. */
export interface RouteTableOptions {
  /**
   * How long a path stays with its publisher's identity after its last
   * announcement ended, ms (RELAY_PUBLISHER_GRACE_MS; default 10000).
   */
  readonly graceMs?: number;
  /** Timers for that grace (default the global ones). */
  readonly timers?: Timers;
}

/** What a session offers the relay for one broadcast: a way to reach its publisher. */
export interface RouteSource {
  /** The upstream session's address, `host:port`. */
  readonly remote: string;
  /** Relays between this relay and the publisher when announced (0: connected here). */
  readonly hops: number;
  /**
   * The publisher's identity when it is connected here (its credential's
   * `sub`, else its publish scopes; with auth off its IP address): the
   * first identity to announce a path owns it (see {@linkcode RouteOwners}).
   * Undefined for a peer relay's route.
   */
  readonly owner?: string;
  /** Hop ids of the announcement, origin first, passed on to peers. */
  readonly hopIds?: readonly bigint[];
  /** Opens an upstream subscription to one track, from group `start` when given. */
  subscribe(track: string, options?: { start?: number }): Promise<UpstreamTrack>;
  /** Asks the source for one track's properties (lite-05 TRACK); rejects when it has no such track. */
  trackInfo?(track: string): Promise<TrackInfo>;
  /** Fetches one group of a track from the source (FETCHes the relay's ring cannot answer). */
  fetch?: UpstreamFetch;
  /** Smoothed RTT of the upstream session in ms, when measured. */
  rttMs?(): number | undefined;
  /** False once the upstream session ended (default: alive). */
  alive?(): boolean;
}

/** A broadcast's selected route as the relay holds it. */
export interface Route {
  /** Broadcast path without a leading slash. */
  readonly path: string;
  /** The selected source. */
  readonly source: RouteSource;
  /** Relays between this relay and the publisher on this route. */
  readonly hops: number;
  /** Hop ids of the selected announcement, origin first. */
  readonly hopIds: readonly bigint[];
  /** When the selected announcement arrived (ms). */
  readonly announcedAt: number;
  /** When the route last changed: selected, replaced, promoted or given a new hop list (ms). */
  readonly lastUpdated: number;
  /** Delivered rate of the broadcast through the selected source. */
  readonly rate: RateMeter;
}

/** A change of a path's route, told to listeners after the table is consistent. */
export type RouteChange =
  | { readonly kind: "installed" | "updated"; readonly path: string; readonly route: Route }
  | {
    readonly kind: "replaced" | "promoted";
    readonly path: string;
    readonly route: Route;
    readonly previous: RouteSource;
  }
  | { readonly kind: "ended"; readonly path: string; readonly previous: RouteSource };

/** A live announcement held by a session; `end()` withdraws it. */
export interface Announcement {
  /** True while this candidate is the path's selected route. */
  readonly active: boolean;
  /** True while this candidate is the path's retained alternate. */
  readonly retained: boolean;
  /** The announcement now carries another hop list (a restart from upstream). */
  update(hops: number, hopIds: readonly bigint[]): void;
  /**
   * Its session is going away (GOAWAY): if this is the selected route and a
   * live alternate is retained, the alternate is promoted now.
   */
  stepDown(): void;
  /** Withdraws the announcement (the publisher ended it or went away); idempotent. */
  end(): void;
}

interface Candidate {
  readonly source: RouteSource;
  readonly announcedAt: number;
  readonly rate: RateMeter;
  hops: number;
  hopIds: readonly bigint[];
  ended: boolean;
  /** Held back: another identity owns the path. */
  waiting: boolean;
}

class SelectedRoute implements Route {
  readonly path: string;
  readonly lastUpdated: number;
  readonly #c: Candidate;
  constructor(path: string, c: Candidate, now: number) {
    this.path = path;
    this.#c = c;
    this.lastUpdated = now;
  }
  get source(): RouteSource {
    return this.#c.source;
  }
  get hops(): number {
    return this.#c.hops;
  }
  get hopIds(): readonly bigint[] {
    return this.#c.hopIds;
  }
  get announcedAt(): number {
    return this.#c.announcedAt;
  }
  get rate(): RateMeter {
    return this.#c.rate;
  }
}

/**
 * One selected route per broadcast path, chosen by route election
 * ({@linkcode compareRoutes}) each time a candidate arrives — never
 * periodically. A live loser is kept as the path's alternate (one per path;
 * a later loser takes its place only if it would win against it) and is
 * promoted when the selected route's announcement ends. A route belongs to
 * its publisher: an announcement by a publisher connected here whose
 * identity does not own the path waits (see {@linkcode RouteOwners}).
 */
export class RouteTable {
  readonly #routes = new Map<string, SelectedRoute>();
  readonly #selected = new Map<string, Candidate>();
  readonly #alternates = new Map<string, Candidate>();
  readonly #listeners = new Set<(change: RouteChange) => void>();
  readonly #metrics: RelayMetrics;
  readonly #now: () => number;
  readonly #owners: RouteOwners;
  /** Announcements waiting for their path's owner to be gone, by path. */
  readonly #waiting = new Map<string, Candidate[]>();

  /** Creates an empty table. */
  constructor(metrics: RelayMetrics, now: () => number, options: RouteTableOptions = {}) {
    this.#metrics = metrics;
    this.#now = now;
    this.#owners = new RouteOwners({
      graceMs: options.graceMs ?? 10_000,
      ...(options.timers ? { timers: options.timers } : {}),
      onFree: (path) => this.#ownerGone(path),
    });
  }

  /** The identity that owns `path` (a publisher connected here), if any. */
  owner(path: string): string | undefined {
    return this.#owners.owner(path);
  }

  /** Number of announcements waiting for their path's owner to be gone. */
  get waiting(): number {
    let n = 0;
    for (const list of this.#waiting.values()) n += list.length;
    return n;
  }

  /** Cancels the owners' grace timers (the relay is stopping). */
  close(): void {
    this.#owners.close();
    this.#waiting.clear();
  }

  /** The selected route of `path`. */
  get(path: string): Route | undefined {
    return this.#routes.get(path);
  }

  /** Every selected route. */
  routes(): Route[] {
    return [...this.#routes.values()];
  }

  /** The retained alternate of `path`, if any. */
  alternate(path: string): RouteSource | undefined {
    return this.#alternates.get(path)?.source;
  }

  /** Number of retained alternates across all paths. */
  get retained(): number {
    return this.#alternates.size;
  }

  /** Calls `fn` after every route change; returns the unsubscribe function. */
  onChange(fn: (change: RouteChange) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * The bitrate meter of `path`'s route through `source` (selected or
   * retained), which a track reading through it adds each group's size to.
   */
  meter(path: string, source: RouteSource): RateMeter | undefined {
    for (const c of [this.#selected.get(path), this.#alternates.get(path)]) {
      if (c?.source === source) return c.rate;
    }
    return undefined;
  }

  /**
   * Offers a session's announcement of `path` as a candidate route and
   * elects; an announcement whose identity does not own the path waits.
   */
  announce(path: string, source: RouteSource): Announcement {
    const c: Candidate = {
      source,
      announcedAt: this.#now(),
      rate: new RateMeter(this.#now),
      hops: source.hops,
      hopIds: source.hopIds ?? [],
      ended: false,
      waiting: false,
    };
    if (source.owner === undefined || this.#owners.claim(path, source.owner)) {
      this.#elect(path, c);
    } else {
      this.#metrics.routeRejectionsTotal.inc({ reason: "not_owner" });
      this.#wait(path, c);
    }
    const selected = () => this.#selected.get(path) === c;
    const retained = () => this.#alternates.get(path) === c;
    return {
      get active(): boolean {
        return selected();
      },
      get retained(): boolean {
        return retained();
      },
      update: (hops, hopIds) => this.#update(path, c, hops, hopIds),
      stepDown: () => this.#stepDown(path, c),
      end: () => this.#withdraw(path, c),
    };
  }

  #elect(path: string, c: Candidate): void {
    const current = this.#selected.get(path);
    if (current === undefined) {
      this.#select(path, c, { kind: "installed" });
      return;
    }
    const decision = compareRoutes(this.#stats(c), this.#stats(current));
    if (decision.accepted) {
      this.#metrics.routeReplacementsTotal.inc();
      this.#offerAlternate(path, current);
      this.#select(path, c, { kind: "replaced", previous: current.source });
    } else {
      this.#metrics.routeRejectionsTotal.inc({ reason: decision.reason });
      this.#offerAlternate(path, c);
      this.#syncGauges();
    }
  }

  // Held back until the owner is gone; past the bound the announcement is refused outright.
  #wait(path: string, c: Candidate): void {
    const list = this.#waiting.get(path) ?? [];
    if (list.length >= MAX_WAITING_PER_PATH) {
      c.ended = true;
      return;
    }
    c.waiting = true;
    list.push(c);
    this.#waiting.set(path, list);
  }

  // The owner of `path` did not come back within its grace: the waiting announcements go,
  // the first live one's identity owning the path from now on.
  #ownerGone(path: string): void {
    const list = this.#waiting.get(path);
    if (!list) return;
    this.#waiting.delete(path);
    for (const c of list) {
      c.waiting = false;
      const owner = c.source.owner!;
      if (!this.#stats(c).alive) {
        c.ended = true;
      } else if (this.#owners.claim(path, owner)) {
        this.#elect(path, c);
      } else {
        this.#metrics.routeRejectionsTotal.inc({ reason: "not_owner" });
        this.#wait(path, c);
      }
    }
  }

  #stats(c: Candidate): RouteStats {
    return {
      alive: !c.ended && (c.source.alive?.() ?? true),
      hops: c.hops,
      bitrateBps: c.rate.bitsPerSecond(),
      rttMs: c.source.rttMs?.(),
    };
  }

  // A live loser becomes the alternate unless the one held already is at least as good.
  #offerAlternate(path: string, c: Candidate): void {
    if (!this.#stats(c).alive) return;
    const held = this.#alternates.get(path);
    if (held && compareRoutes(this.#stats(c), this.#stats(held)).accepted !== true) return;
    this.#alternates.set(path, c);
  }

  #select(
    path: string,
    c: Candidate,
    change: { kind: "installed" } | { kind: "replaced" | "promoted"; previous: RouteSource },
  ): void {
    if (this.#alternates.get(path) === c) this.#alternates.delete(path);
    this.#selected.set(path, c);
    const route = new SelectedRoute(path, c, this.#now());
    this.#routes.set(path, route);
    this.#syncGauges();
    this.#emit({ ...change, path, route });
  }

  #update(path: string, c: Candidate, hops: number, hopIds: readonly bigint[]): void {
    if (c.ended) return;
    c.hops = hops;
    c.hopIds = hopIds;
    if (this.#selected.get(path) !== c) return;
    const route = new SelectedRoute(path, c, this.#now());
    this.#routes.set(path, route);
    this.#emit({ kind: "updated", path, route });
  }

  #stepDown(path: string, c: Candidate): void {
    const next = this.#alternates.get(path);
    if (c.ended || this.#selected.get(path) !== c || !next || !this.#stats(next).alive) return;
    this.#metrics.routePromotionsTotal.inc();
    this.#select(path, next, { kind: "promoted", previous: c.source });
  }

  #withdraw(path: string, c: Candidate): void {
    if (c.ended) return;
    c.ended = true;
    if (c.waiting) {
      c.waiting = false;
      const list = this.#waiting.get(path)?.filter((w) => w !== c) ?? [];
      if (list.length > 0) this.#waiting.set(path, list);
      else this.#waiting.delete(path);
      return;
    }
    if (c.source.owner !== undefined) this.#owners.release(path, c.source.owner);
    if (this.#alternates.get(path) === c) {
      this.#alternates.delete(path);
      this.#syncGauges();
      return;
    }
    if (this.#selected.get(path) !== c) return; // a loser that was not retained
    const next = this.#alternates.get(path);
    this.#alternates.delete(path);
    if (next && this.#stats(next).alive) {
      this.#metrics.routePromotionsTotal.inc();
      this.#select(path, next, { kind: "promoted", previous: c.source });
      return;
    }
    this.#selected.delete(path);
    this.#routes.delete(path);
    this.#syncGauges();
    this.#emit({ kind: "ended", path, previous: c.source });
  }

  #syncGauges(): void {
    this.#metrics.broadcastsActive.set({}, this.#routes.size);
    this.#metrics.routesRetained.set({}, this.#alternates.size);
  }

  #emit(change: RouteChange): void {
    for (const fn of [...this.#listeners]) {
      try {
        fn(change);
      } catch {
        // A listener's failure is its own; the table stays consistent.
      }
    }
  }
}
