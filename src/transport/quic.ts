/**
 * Native QUIC sessions (`Deno.QuicConn`) behind the transport-neutral
 * `Session`: wrapping an accepted connection (`quic/session.ts`), dialing
 * `moqt://host:port/path?query` URLs (`quic/dial.ts`), and a small listener
 * for tests and single-protocol servers (`quic/listen.ts`).
 */
export { quicSession, type QuicSessionOptions } from "./quic/session.ts";
export {
  type CertificateHash,
  connectQuicSession,
  type ConnectQuicSessionOptions,
  QuicConnectError,
} from "./quic/dial.ts";
export { listenQuic, type ListenQuicOptions, type QuicSessionListener } from "./quic/listen.ts";
