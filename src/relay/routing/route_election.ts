/**
 * Route election: whether a new candidate route for a broadcast displaces
 * the route the relay uses now. Liveness and hop count are structural and
 * decide outright; bitrate and RTT are noisy measurements, so a candidate
 * must beat the incumbent by a margin (hysteresis), or every relay would
 * chase whichever peer measured best a moment ago and the mesh would flap.
 *
 * @module
 */

/** What the election knows about one route. */
export interface RouteStats {
  /** The route's session is open and its announcement active. */
  readonly alive: boolean;
  /** Relays between this relay and the publisher (0: the publisher is connected here). */
  readonly hops: number;
  /** Measured delivered rate of the broadcast through this route, bit/s; 0 or undefined: unknown. */
  readonly bitrateBps?: number | undefined;
  /** Smoothed RTT of the route's session, ms; 0 or undefined: unknown. */
  readonly rttMs?: number | undefined;
}

/** Why a candidate won. */
export type AcceptReason = "alive" | "hops" | "bitrate" | "rtt";

/** Why a candidate did not displace the incumbent: the `reason` label of route_rejections_total. */
export type RejectReason =
  | "dead_candidate"
  | "inferior_hops"
  | "inferior_bitrate"
  | "insufficient_bitrate_margin"
  | "inferior_rtt"
  | "insufficient_rtt_margin"
  | "equal_or_unknown";

/** The outcome of {@linkcode compareRoutes}. */
export type RouteDecision =
  | { readonly accepted: true; readonly reason: AcceptReason }
  | { readonly accepted: false; readonly reason: RejectReason };

/** A candidate wins on bitrate only at this multiple of the incumbent's bitrate or more. */
export const BITRATE_MARGIN = 1.2;
/** A candidate wins on RTT when it is at least this many ms lower… */
export const RTT_MARGIN_MS = 5;
/** …or at most this fraction of the incumbent's RTT. */
export const RTT_MARGIN_RATIO = 0.8;

const accept = (reason: AcceptReason): RouteDecision => ({ accepted: true, reason });
const reject = (reason: RejectReason): RouteDecision => ({ accepted: false, reason });

function known(value: number | undefined): value is number {
  return value !== undefined && Number.isFinite(value) && value > 0;
}

/**
 * Decides whether `candidate` displaces `incumbent`, in this order:
 * a live candidate beats a dead incumbent (a dead candidate never wins);
 * fewer hops wins and more hops loses; then, when both bitrates are known,
 * the candidate wins at ≥ 1.2× the incumbent's and loses otherwise; then,
 * when both RTTs are known, it wins when at least 5 ms lower or at most
 * 0.8× the incumbent's. A value unknown on either side is never compared,
 * so an unknown never displaces a known route (`equal_or_unknown`).
 *
 * @example
 * ```ts
 * compareRoutes({ alive: true, hops: 1, rttMs: 20 }, { alive: true, hops: 1, rttMs: 30 });
 * // { accepted: true, reason: "rtt" }
 * ```
 */
export function compareRoutes(candidate: RouteStats, incumbent: RouteStats): RouteDecision {
  if (!candidate.alive) return reject("dead_candidate");
  if (!incumbent.alive) return accept("alive");
  if (candidate.hops < incumbent.hops) return accept("hops");
  if (candidate.hops > incumbent.hops) return reject("inferior_hops");
  const cb = candidate.bitrateBps;
  const ib = incumbent.bitrateBps;
  if (known(cb) && known(ib) && cb !== ib) {
    if (cb >= ib * BITRATE_MARGIN) return accept("bitrate");
    return reject(cb > ib ? "insufficient_bitrate_margin" : "inferior_bitrate");
  }
  const cr = candidate.rttMs;
  const ir = incumbent.rttMs;
  if (!known(cr) || !known(ir) || cr === ir) return reject("equal_or_unknown");
  if (cr > ir) return reject("inferior_rtt");
  if (ir - cr >= RTT_MARGIN_MS || cr <= ir * RTT_MARGIN_RATIO) return accept("rtt");
  return reject("insufficient_rtt_margin");
}
