/**
 * moq-lite (lite-05 and lite-04) sessions over any transport session, and
 * the publish/subscribe API the funnel and the relay share.
 *
 * @example
 * ```ts
 * import { accept, Announcer, TrackProducer } from "./mod.ts";
 * const track = new TrackProducer();
 * const moq = await accept(session, {
 *   serve: ({ path, track: name }) => path === "demo" && name === "records" ? track : "not-found",
 * });
 * moq.announce("demo");
 * track.writeGroup(1, new TextEncoder().encode("hello"));
 * ```
 *
 * @module
 */
export {
  accept,
  connect,
  type MoqAcceptOptions,
  MoqSession,
  type MoqSessionOptions,
  type ReceivedGroup,
  type ServeDecision,
  type ServeHandler,
  type ServeRequest,
  type SubscribeOptions,
  Subscription,
} from "./session/mod.ts";
export { CachedGroup, type GroupFrames } from "./cached_group.ts";
export {
  TrackCursor,
  type TrackObserver,
  TrackProducer,
  type TrackProducerOptions,
  type WriteGroupOptions,
} from "./track.ts";
export { type AnnounceEvent, type Announcement, Announcer } from "./announcer.ts";
export { MoqCode, MoqError, type MoqErrorKind } from "./errors.ts";
export { MoqStats } from "./stats.ts";
export { wirePath, wirePrefix } from "./path.ts";
export { type TrackInfo, type Version, VERSIONS } from "./codec/messages.ts";
export { DecodeError } from "../wire/mod.ts";
