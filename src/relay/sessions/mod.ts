/**
 * The relay's MoQ sessions: admitting each with its credential, serving
 * its subscriptions and announcements through the routing core, and
 * measuring round trips to peers.
 *
 * @module
 */

export { admitSession, PEER_PARAMETER } from "./session_grants.ts";
export { RelaySessions } from "./relay_sessions.ts";
export { type PeerGoaway, SelfDialError } from "./peer_session.ts";
