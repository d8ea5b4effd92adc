/**
 * The relay mesh: dialing the configured peers, keeping each link up with
 * backoff, and the credentials a relay presents to its peers.
 *
 * @module
 */

export {
  type PeerCredential,
  type PeerEntry,
  Peers,
  type PeerTransport,
  peerTransport,
  type Resolver,
} from "./peers.ts";
export { peerCredentials } from "./peer_credential.ts";
