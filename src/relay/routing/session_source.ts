import type { MoqPeer, TrackInfo } from "../../moq/mod.ts";
import type { UpstreamFetch } from "./fetch_forward.ts";
import type { RouteSource } from "./route_table.ts";
import type { IncomingGroup, UpstreamTrack } from "./upstream_track.ts";

/** Groups an upstream subscription may hold before the distributor's loop takes them. */
const UPSTREAM_QUEUE_LIMIT = 1024;

/**
 * The session a route runs through, as the session layer keeps it: routing
 * reads these fields and talks to `moq` itself, never calling back into the
 * session layer.
 */
export interface RouteSession {
  /** The upstream moq session. */
  readonly moq: MoqPeer;
  /** Smoothed RTT, ms, once measured. */
  readonly srtt: number | undefined;
  /** The session sent GOAWAY: its routes are on their way out. */
  readonly draining: boolean;
}

/** What an announcement tells about its route, besides the session it came on. */
export interface SessionRouteOptions {
  /** Relays between this relay and the publisher (0: connected here). */
  readonly hops: number;
  /** Hop ids of the announcement, origin first. */
  readonly hopIds: readonly bigint[];
  /** The publisher's identity when it is connected here (see {@linkcode RouteSource.owner}). */
  readonly owner?: string | undefined;
}

/**
 * A route to broadcast `path` through an upstream moq session: the session
 * layer offers it as a value (its session record and what the announcement
 * said), and routing opens the upstream subscription, TRACK and FETCH on
 * the session itself.
 */
export class SessionSource implements RouteSource {
  /** {@inheritDoc RouteSource.remote} */
  readonly remote: string;
  /** {@inheritDoc RouteSource.hops} */
  readonly hops: number;
  /** {@inheritDoc RouteSource.owner} */
  readonly owner?: string;
  /** {@inheritDoc RouteSource.hopIds} */
  readonly hopIds: readonly bigint[];
  readonly #session: RouteSession;
  readonly #path: string;

  /** A route to `path` through `session`. */
  constructor(session: RouteSession, path: string, options: SessionRouteOptions) {
    this.#session = session;
    this.#path = path;
    this.remote = session.moq.remote;
    this.hops = options.hops;
    this.hopIds = options.hopIds;
    if (options.owner !== undefined) this.owner = options.owner;
    // lite-05 alone can ask a track's properties before subscribing (TRACK).
    if (session.moq.version === "moq-lite-05") {
      this.trackInfo = (track) => session.moq.trackInfo(path, track);
    }
  }

  /** {@inheritDoc RouteSource.trackInfo} */
  readonly trackInfo?: (track: string) => Promise<TrackInfo>;

  /** {@inheritDoc RouteSource.subscribe} */
  subscribe(track: string, options?: { start?: number }): Promise<UpstreamTrack> {
    return upstream(this.#session.moq, this.#path, track, options?.start);
  }

  /** {@inheritDoc RouteSource.fetch} */
  readonly fetch: UpstreamFetch = (track, group, options): Promise<IncomingGroup> =>
    this.#session.moq.fetch(this.#path, track, group, options);

  /** {@inheritDoc RouteSource.rttMs} */
  rttMs(): number | undefined {
    return this.#session.srtt;
  }

  /** {@inheritDoc RouteSource.alive} */
  alive(): boolean {
    return !this.#session.moq.isClosed && !this.#session.draining;
  }
}

/** The relay's upstream subscription to one track of the session's broadcast. */
async function upstream(
  moq: MoqPeer,
  path: string,
  track: string,
  start: number | undefined,
): Promise<UpstreamTrack> {
  // The distributor takes every group at once, so this queue only ever holds one
  // burst (groups retransmitted on a lossy link land together); never drop from it.
  // Each group is handed over at its first frame and followed frame by frame (cut-through).
  const sub = moq.subscribe(path, track, {
    queueLimit: UPSTREAM_QUEUE_LIMIT,
    partial: true,
    ...(start === undefined ? {} : { start }),
  });
  try {
    await sub.ready;
  } catch (e) {
    sub.close();
    throw e;
  }
  return {
    groups: sub,
    close: () => sub.close(),
    inflight: () => sub.receiving,
    skipped: () => sub.skipped,
    answered: sub.answered,
    info: sub.info,
  };
}
