/**
 * Transports that carry MoQ sessions: native QUIC, WebTransport over HTTP/3
 * and QMux over WebSocket, all behind the transport-neutral {@link Session}.
 * A peer's stream reset or stop surfaces as {@link StreamError}, a lost
 * session as {@link SessionClosedError}.
 *
 * @example
 * ```ts
 * import { connectQuicSession } from "@sluice/sluice/transport";
 * import { connect, VERSIONS } from "@sluice/sluice/moq";
 * const session = await connectQuicSession(new URL("moqt://relay.example:4433/"), {
 *   alpn: VERSIONS,
 * });
 * const moq = await connect(session);
 * ```
 *
 * @module
 */
export type {
  BidiStream,
  RecvStream,
  SendStream,
  Session,
  SessionCloseInfo,
  StreamOptions,
} from "./session.ts";
export { SessionClosedError, StreamError, type StreamErrorKind } from "./errors.ts";
export {
  type CertificateHash,
  connectQuicSession,
  type ConnectQuicSessionOptions,
  listenQuic,
  type ListenQuicOptions,
  QuicConnectError,
  quicSession,
  type QuicSessionListener,
  type QuicSessionOptions,
} from "./quic/mod.ts";
export { H3_ALPN, listen, type Listener, type ListenOptions } from "./listener.ts";
export { DEAD_PEER_MS, IDLE_TIMEOUT_MS, keepAliveFor } from "./liveness.ts";
export { type Timers } from "../timers/mod.ts";
export { type HeaderField } from "./h3/mod.ts";
export { formatAddr, isIpLiteral, isLoopbackAddress } from "./address.ts";
export {
  bindHostname,
  type EveryInterface,
  everyInterface,
  ipv4OnlyReason,
  probeEveryInterface,
  type ProbeListen,
} from "./every_interface.ts";
export {
  raiseUdpReceiveBuffer,
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
  type UdpReceiveBuffers,
  udpReceiveQueue,
  udpSocketDrops,
} from "./udp_buffers.ts";
export {
  closePayload,
  type ControlFrame,
  decodeMessage,
  DEFAULT_PARAMS,
  encodeClientFrame,
  encodeFrame,
  encodeTransportParams,
  type Frame,
  type Negotiated,
  Opcode,
  openRawWebSocket,
  type OpenWebSocketOptions,
  parseClose,
  parseServerFrame,
  parseSubprotocol,
  type RawWebSocket,
  streamFrameHeader,
  streamId,
  type StreamKind,
  subprotocolOffer,
  TransportCode,
  usesRecords,
  type WsFrame,
} from "./qmux/mod.ts";
export { freeUdpTcpPort } from "./free_port.ts";
export {
  type Admission,
  admitAny,
  type AdmitWebTransport,
  asWebTransport,
  chooseProtocol,
  connectWebTransport,
  type ConnectWebTransportOptions,
  type WebTransportLike,
  WebTransportRefusedError,
  type WebTransportRequest,
  WebTransportStreamError,
} from "./webtransport/mod.ts";
export {
  connectWebTransportApi,
  type ConnectWebTransportApiOptions,
  hasWebTransportApi,
  type WebTransportApi,
  type WebTransportApiBidi,
  type WebTransportApiDatagrams,
  webTransportApiSession,
  type WebTransportApiWritable,
} from "./webtransport/mod.ts";
export {
  acceptQMux,
  type AcceptQMuxOptions,
  connectQMux,
  type ConnectQMuxOptions,
  connectQMuxWeb,
  type ConnectQMuxWebOptions,
  isWebSocketUpgrade,
  QMUX_DRAFTS,
  type QMuxClientOptions,
  QMuxConnectError,
  type QMuxDraft,
  QMuxSession,
  type QMuxSessionOptions,
  selectSubprotocol,
  type TransportParams,
  type WireFormat,
} from "./qmux/mod.ts";
export { connectSession, type ConnectSessionOptions, SESSION_SCHEMES } from "./connect.ts";
