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
export { type QMuxClientOptions } from "./client_session.ts";
export { encodeTransportParams, type TransportParams } from "./params.ts";
export { openRawWebSocket, type RawWebSocket } from "./ws_client.ts";
export {
  closePayload,
  encodeClientFrame,
  Opcode,
  parseClose,
  parseServerFrame,
} from "./ws_frame.ts";
export { encodeFrame, type Frame, streamFrameHeader } from "./frame.ts";
export { decodeMessage } from "./frame_decode.ts";
export { streamId } from "./stream_ids.ts";
export { usesRecords } from "./subprotocol.ts";
export { QMuxConnectError, TransportCode } from "./errors.ts";
export { QMuxSession } from "./session.ts";
export { DEFAULT_PARAMS, type QMuxSessionOptions } from "./session_options.ts";
export {
  parseSubprotocol,
  QMUX_DRAFTS,
  type QMuxDraft,
  selectSubprotocol,
  subprotocolOffer,
  type WireFormat,
} from "./subprotocol.ts";
export type { ControlFrame } from "./frame.ts";
export type { OpenWebSocketOptions } from "./ws_client.ts";
export type { WsFrame } from "./ws_frame.ts";
export type { Negotiated } from "./subprotocol.ts";
export type { StreamKind } from "./stream_ids.ts";
