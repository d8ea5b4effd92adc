import type {
  Announcer,
  DeliveryTurns,
  MoqSessionOptions,
  ServeDecision,
  SessionPolicy,
} from "../../moq/mod.ts";
import type { TrackPatterns } from "../../path/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { type RelayCore, SubscribeError } from "../routing/mod.ts";
import { type Admission, allowed } from "./session_grants.ts";
import { RTT_PING_PATH } from "./session_rtt.ts";

/** What every relay session shares, whoever dialed it. */
export interface RelayMoqContext {
  /** The relay's announcements. */
  readonly announcer: Announcer;
  /** The relay's hop id. */
  readonly hopId: bigint;
  /** GROUP_CACHE_SIZE: each subscriber's queue bound. */
  readonly cacheSize: number;
  /** Delivery turns shared by every session, if any. */
  readonly turns: DeliveryTurns | undefined;
  /** Routing and fan-out. */
  readonly core: RelayCore;
  /** Metrics. */
  readonly metrics: RelayMetrics;
  /** Tracks whose single-frame groups go to clients as datagrams. */
  readonly datagramTracks: TrackPatterns | undefined;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/** The moq options of every relay session, before it is admitted. */
export function relayMoqOptions(c: RelayMoqContext): MoqSessionOptions {
  return {
    announcer: c.announcer,
    origin: c.hopId,
    maxGroupQueue: c.cacheSize,
    ...(c.turns ? { deliveryTurns: c.turns } : {}),
    log: c.log,
  };
}

/**
 * What an admitted relay session may do: announce and subscribe to what
 * its admission `a` allows, its subscriptions served from the routing core.
 */
export function relaySessionPolicy(c: RelayMoqContext, a: Admission): SessionPolicy {
  const m = c.metrics;
  const datagramTracks = c.datagramTracks;
  return {
    // A peer's one session carries every track between two relays: only each subscription's
    // bound holds it (a client's session holds the default across its subscriptions).
    ...(a.peer ? { maxSessionBytesInFlight: Infinity } : {}),
    announceFilter: (path) => allowed(a, "subscribe", path),
    acceptAnnounce: (path) => {
      if (allowed(a, "publish", path)) return true;
      // An announcement the credential does not cover never becomes a route.
      m.routeRejectionsTotal.inc({ reason: "unauthorized" });
      return false;
    },
    serve: async (r): Promise<ServeDecision> => {
      if (r.path === RTT_PING_PATH) return "not_found";
      if (!allowed(a, "subscribe", r.path, r.track)) {
        if (r.kind !== "fetch") m.subscribeErrorsTotal.inc({ code: "unauthorized" });
        return "unauthorized";
      }
      try {
        // A relay answers TRACK_STATUS from the upstream subscription a SUBSCRIBE would open.
        const kind = r.kind === "status" ? "subscribe" : r.kind;
        return await c.core.source(r.path, r.track, kind, r.start);
      } catch (e) {
        if (e instanceof SubscribeError) {
          return e.code === "unauthorized" ? "unauthorized" : "not_found";
        }
        throw e;
      }
    },
    // Clients only: a peer relay has no ledger behind it to repair a lost datagram.
    ...(datagramTracks && !datagramTracks.empty
      ? {
        datagrams: (path: string, track: string) => !a.peer && datagramTracks.matches(path, track),
      }
      : {}),
  };
}
