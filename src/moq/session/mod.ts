/**
 * moq-lite sessions: setup and lifecycle, serving our tracks and
 * announcements to the peer, and consuming the peer's.
 *
 * @module
 */
export { accept, askAdmission, connect } from "./connect.ts";
export { MoqSession } from "./moq_session.ts";
export { MAX_DATAGRAM_BODY } from "./send_datagram.ts";
export { MAX_ANNOUNCED } from "./types.ts";
export { Subscription } from "./subscription.ts";
export { DELIVERY_TURN_MS, DeliveryTurns, type DeliveryTurnsOptions } from "./delivery_turns.ts";
export { DeliveryGaps } from "./delivery_gaps.ts";
export type {
  AdmitDecision,
  FetchOptions,
  MoqAcceptOptions,
  MoqSessionOptions,
  ReceivedGroup,
  ServeDecision,
  ServeHandler,
  ServeRequest,
  SessionPolicy,
  SubscribeOptions,
} from "./types.ts";
export { DEFAULT_BYTES_IN_FLIGHT } from "./group_streams.ts";
export { SESSION_BYTES_IN_FLIGHT, SessionSends } from "./session_sends.ts";
