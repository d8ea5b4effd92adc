/**
 * Native QUIC sessions (`Deno.QuicConn`) behind the transport-neutral
 * `Session`: wrapping an accepted connection (`session.ts`), dialing
 * `moqt://host:port/path?query` URLs (`dial.ts`), and a small listener
 * for tests and single-protocol servers (`listen.ts`).
 */
export { quicSession, type QuicSessionOptions } from "./session.ts";
export {
  type CertificateHash,
  connectQuicSession,
  type ConnectQuicSessionOptions,
  QuicConnectError,
} from "./dial.ts";
export { listenQuic, type ListenQuicOptions, type QuicSessionListener } from "./listen.ts";
export { fromDenoQuicError, peerStreamErrorCode } from "./quic_errors.ts";
