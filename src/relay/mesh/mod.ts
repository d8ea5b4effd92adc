/**
 * The relay mesh: dialing the configured peers, keeping each link up with
 * backoff, and the credentials a relay presents to its peers.
 *
 * @module
 */

export { type PeerEntry, Peers } from "./peers.ts";
export { type PeerTransport, peerTransport } from "./peer_transport.ts";
export { type Resolver } from "./peer_resolver.ts";
export { type PeerCredential, peerCredentials } from "./peer_credential.ts";
