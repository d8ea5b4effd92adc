/**
 * The transport-neutral errors a stream or session operation fails with.
 * Each transport translates its runtime's errors into these once, where it
 * hands streams out (`quic.ts`, `webtransport/`), so nothing above
 * `src/transport/` inspects Deno's error classes or messages.
 */

/** How a peer ended a stream abnormally: "reset" (RESET_STREAM) or "stopped" (STOP_SENDING). */
export type StreamErrorKind = "reset" | "stopped";

/**
 * The peer ended one stream abnormally: it reset the stream, or stopped
 * reading what we send. The session lives on.
 */
export class StreamError extends Error {
  /** "reset": the peer abandoned its sending half; "stopped": it no longer reads ours. */
  readonly kind: StreamErrorKind;
  /** The application error code the peer sent. */
  readonly code: number;
  /** Makes the error. */
  constructor(kind: StreamErrorKind, code: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StreamError";
    this.kind = kind;
    this.code = code;
  }
}

/**
 * A stream operation failed because its session is gone: closed by either
 * side, or the connection was lost.
 */
export class SessionClosedError extends Error {
  /** Stable kind for callers that branch. */
  readonly kind = "session-closed" as const;
  /** Makes the error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SessionClosedError";
  }
}
