/**
 * Transports that carry MoQ sessions: native QUIC and WebTransport over HTTP/3.
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
} from "./quic.ts";
export { formatAddr } from "./address.ts";
export { H3_ALPN, listen, type Listener, type ListenOptions } from "./listener.ts";
export { freeUdpTcpPort } from "./free_port.ts";
export * from "./webtransport/mod.ts";
