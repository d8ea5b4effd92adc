/**
 * QMux over WebSocket (draft-ietf-quic-qmux 00/01/02 and @moq/qmux 0.0.6's
 * legacy `webtransport` form) behind the transport-neutral `Session`: a
 * dialer for `wss://` URLs, and upgrading HTTP requests on a server.
 *
 * @module
 */
export { acceptQMux, type AcceptQMuxOptions, isWebSocketUpgrade } from "./accept.ts";
export { connectQMux, type ConnectQMuxOptions } from "./dial.ts";
export { connectQMuxWeb, type ConnectQMuxWebOptions } from "./web_dial.ts";
export type { QMuxClientOptions } from "./client_session.ts";
export { QMuxConnectError, TransportCode } from "./errors.ts";
export type { TransportParams } from "./params.ts";
export { DEFAULT_PARAMS, QMuxSession, type QMuxSessionOptions } from "./session.ts";
export {
  parseSubprotocol,
  QMUX_DRAFTS,
  type QMuxDraft,
  selectSubprotocol,
  subprotocolOffer,
  type WireFormat,
} from "./subprotocol.ts";
