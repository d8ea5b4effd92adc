// How the relay serves a track whose publisher asks for in-order delivery (a funnel's records).
import type { TrackInfo } from "../../moq/mod.ts";

/**
 * How long a group of a flow-controlled track waits for a relay subscriber at
 * least, ms: a subscriber whose next group waited longer is slower than the
 * track. As the funnel's own listener (RECORD_LAG_MS), whatever max latency
 * the relay's upstream advertised (a funnel's relay session says 5 s so its
 * own sends to a link gone silent end): a group read back after an upstream
 * outage of a few seconds is still wanted.
 */
export const FLOW_LAG_MS = 30_000;

/**
 * A track whose publisher asks for in-order delivery (a funnel's records) is
 * flow controlled: a subscriber that falls behind the ring reads the groups
 * it missed back (from the ring, else by FETCH upstream), in order, and skips
 * ahead (counted) only once its next group waited longer than the lag bound
 * (the larger of the track's max latency and {@linkcode FLOW_LAG_MS}), that
 * is when it is slower than the track; the bound is advertised downstream as
 * the track's max latency, so a send is not given up before it. Other tracks
 * (media) keep the queue bound: a subscriber behind by more skips to the
 * latest.
 */
export function flowControl(info: TrackInfo | undefined): { lagMs?: number; maxLatency?: number } {
  if (!info?.ordered) return {};
  const lagMs = Math.max(info.maxLatency, FLOW_LAG_MS);
  return { lagMs, maxLatency: lagMs };
}

/**
 * A track's properties as the relay serves them (TRACK_INFO): a
 * flow-controlled track's max latency is its lag bound, whether a TRACK is
 * answered before the first subscription or by the distributor after it.
 * Subscribers keep an unread group that long (`@moq/net` drops it after
 * that), so the first ones must not be told the publisher's shorter one.
 */
export function servedInfo(info: TrackInfo): TrackInfo {
  const { maxLatency } = flowControl(info);
  return maxLatency === undefined ? info : { ...info, maxLatency };
}
