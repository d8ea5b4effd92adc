/**
 * The transport-neutral session every MoQ session runs on. Native QUIC
 * (`quic.ts`), sluice's own WebTransport over HTTP/3 (`webtransport/`) and
 * QMux over WebSocket (`qmux/`) implement it; `src/moq/` never knows which
 * one it has.
 *
 * Contract notes (shared by the implementations; extend additively):
 * - Each stream owns its errors: a failing stream rejects its own reads or
 *   writes and never throws into the session or the process.
 * - `close()` is idempotent; `closed` always resolves (never rejects).
 * - Deno 2.9's QUIC cannot send a stream reset with a code: `reset()`
 *   is best effort (FIN on native QUIC) and `stop()` sends STOP_SENDING 0.
 *   QMux sends the code of a `StreamError` (or a `streamErrorCode`) given
 *   as the abort or cancel reason, else 0.
 * - Failures are the neutral errors of `errors.ts`: `StreamError` (the
 *   peer reset or stopped a stream, with its code) and `SessionClosedError`
 *   (the session is gone). Opening a stream throws them directly, and
 *   WebTransport receive halves (which already pass through a reader that
 *   strips the stream header) and every QMux stream half (QMux streams are
 *   ours end to end) reject with them. Native QUIC stream halves
 *   and WebTransport send halves are Deno's own streams, not wrappers: a
 *   wrapper per stream costs about a quarter more CPU per small MoQ group
 *   (measured with bench/moq_bench.ts). Their reads and writes reject
 *   with the runtime's errors, so a caller that branches on why a read or
 *   write failed passes the error through `translateError` first.
 */
export interface Session {
  /** Which transport carries the session. */
  readonly transport: "quic" | "webtransport" | "websocket";
  /** Negotiated application protocol (ALPN, WT-Protocol or the QMux subprotocol's), one of the list the caller passed, e.g. "moq-lite-05". */
  readonly protocol: string;
  /** The URL the client dialed (path and query, e.g. the `jwt` parameter), when known. */
  readonly url: URL | undefined;
  /** The peer's address as `host:port`. */
  readonly remote: string;
  /** Opens a bidirectional stream. */
  openBidi(options?: StreamOptions): Promise<BidiStream>;
  /** Opens a unidirectional send stream. */
  openUni(options?: StreamOptions): Promise<SendStream>;
  /** Accepts the next peer-opened bidirectional stream; undefined once the session ended. */
  acceptBidi(): Promise<BidiStream | undefined>;
  /** Accepts the next peer-opened unidirectional stream; undefined once the session ended. */
  acceptUni(): Promise<RecvStream | undefined>;
  /** Sends a datagram when the peer accepts them (best effort). */
  sendDatagram?(data: Uint8Array): Promise<void>;
  /** Reads the next datagram; undefined once the session ended. */
  readDatagram?(): Promise<Uint8Array | undefined>;
  /** Largest datagram payload now, 0 when datagrams are not possible. */
  readonly maxDatagramSize?: number;
  /**
   * Translates what one of this session's streams threw into a neutral
   * error (`StreamError`, `SessionClosedError`), with this transport's
   * codes; anything else, or an error already translated, comes back as is.
   */
  translateError(err: unknown): unknown;
  /** Ends the session with an application code and reason. Idempotent. */
  close(code: number, reason: string): void;
  /** Resolves when the session ends, with the code and reason (ours or the peer's). */
  readonly closed: Promise<SessionCloseInfo>;
}

/** Why a session ended. */
export interface SessionCloseInfo {
  /** Application close code (0 for a clean close). */
  readonly code: number;
  /** Reason text, possibly empty. */
  readonly reason: string;
  /** True when the connection was lost rather than closed by either side. */
  readonly dropped?: boolean;
}

/** Options for opening a stream. */
export interface StreamOptions {
  /** Higher values are sent first (QUIC sendOrder). */
  readonly sendOrder?: number;
}

/** A stream's send half. */
export interface SendStream {
  /** The Web-standard writable; `close()` sends FIN. */
  readonly writable: WritableStream<Uint8Array>;
  /** Changes the stream's priority while it is open. */
  setSendOrder?(order: number): void;
}

/** A stream's receive half. */
export interface RecvStream {
  /** The Web-standard readable; ends at the peer's FIN, errors on its reset. */
  readonly readable: ReadableStream<Uint8Array>;
}

/** Both halves of a bidirectional stream. */
export interface BidiStream extends SendStream, RecvStream {}
