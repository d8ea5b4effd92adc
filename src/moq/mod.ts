/**
 * moq-lite (lite-05 and lite-04) sessions over any transport session, and
 * the publish/subscribe API the funnel and the relay share.
 *
 * A session runs over a {@link Session} from `@sluice/sluice/transport`
 * (native QUIC or WebTransport): {@link connect} as a client, {@link accept}
 * as a server. A publisher offers broadcasts through an {@link Announcer}
 * and serves tracks from {@link TrackProducer}s; a subscriber calls
 * `subscribe` and iterates the groups.
 *
 * @example Publish a track
 * ```ts
 * import { accept, TrackProducer } from "@sluice/sluice/moq";
 * const track = new TrackProducer();
 * const moq = await accept(session, {
 *   serve: ({ path, track: name }) => path === "demo" && name === "records" ? track : "not_found",
 * });
 * moq.announce("demo");
 * track.writeGroup(1, new TextEncoder().encode("hello"));
 * ```
 *
 * @module
 */
export {
  accept,
  type AdmitDecision,
  connect,
  type FetchOptions,
  MAX_ANNOUNCED,
  MAX_DATAGRAM_BODY,
  type MoqAcceptOptions,
  MoqSession,
  type MoqSessionOptions,
  type ReceivedGroup,
  type ServeDecision,
  type ServeHandler,
  type ServeRequest,
  type SessionPolicy,
  type SubscribeOptions,
  Subscription,
} from "./session/mod.ts";
export {
  CachedGroup,
  type FetchedGroup,
  type GroupFetcher,
  type GroupFrames,
  type GroupPresence,
  HOLE_WAIT_MS,
  LiveFrames,
  type LiveState,
  MAX_BURST_GROUPS,
  TrackCursor,
  type TrackObserver,
  TrackProducer,
  type TrackProducerOptions,
  type WriteGroupOptions,
} from "./track/mod.ts";
export {
  type AnnounceEvent,
  type AnnounceListener,
  type Announcement,
  Announcer,
} from "./announcer.ts";
export { MoqCode, MoqError, type MoqErrorCode } from "./errors.ts";
export { MoqStats } from "./stats.ts";
export { randomHopId } from "./hops.ts";
export { type SessionLease, startLease } from "./session_lease.ts";
export { DeliveryGaps } from "./session/mod.ts";
export { DecodeError } from "../wire/mod.ts";
export { encodeGroupStreamHeader, type GroupHeader } from "./codec/mod.ts";
export { type Setup, type TrackInfo, type Version, VERSIONS } from "./codec/mod.ts";
export { GOAWAY_SCHEMES, goawayRedirect } from "./goaway_redirect.ts";
export { DELIVERY_TURN_MS, DeliveryTurns, type DeliveryTurnsOptions } from "./session/mod.ts";

/** The moq-lite wire codec: every message encoded and decoded (for peers and fuzzers). */
export * as codec from "./codec/mod.ts";
export { type MoqPeer } from "./peer.ts";
export {
  acceptIetf,
  connectIetf,
  IETF_ALPN,
  IETF_PROTOCOLS,
  IETF_VERSION,
  IETF_WEB_PROTOCOLS,
  IetfCode,
  ietfCodec,
  type IetfConnectOptions,
  type IetfDraft,
  ietfDraftOf,
  IetfSession,
  MAX_OUR_PUSHES,
  type OpenTrack,
  type OpenTracks,
} from "./ietf/mod.ts";
