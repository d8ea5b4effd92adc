/**
 * Routing and fan-out: the table of announced broadcasts and the route
 * elected for each, one distributor per track that subscribes upstream,
 * repairs gaps and fans groups out, and FETCH forwarded along the route.
 *
 * @module
 */

export { RelayCore } from "./relay_core.ts";
export { SubscribeError } from "./upstream_request.ts";
export { type Announcement, type RouteChange, RouteTable } from "./route_table.ts";
export { type UpstreamTrack } from "./upstream_track.ts";
export { type RouteSession, SessionSource } from "./session_source.ts";
export { FLOW_LAG_MS } from "./flow_control.ts";
