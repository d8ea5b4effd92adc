/**
 * The transport-neutral errors a stream or session operation fails with.
 * Each transport translates its runtime's errors into these once, where it
 * hands streams out (`quic.ts`, `webtransport/`), so nothing above
 * `src/transport/` inspects Deno's error classes or messages.
 */

import { SluiceError } from "../errors/mod.ts";

/** How a peer ended a stream abnormally: "reset" (RESET_STREAM) or "stopped" (STOP_SENDING). */
export type StreamErrorKind = "reset" | "stopped";

/**
 * The peer ended one stream abnormally: it reset the stream, or stopped
 * reading what we send. The session lives on.
 */
export class StreamError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["stream_reset", "stream_stopped"] as const;
  /** `stream_reset`: the peer abandoned its sending half; `stream_stopped`: it no longer reads ours. */
  declare readonly code: (typeof StreamError.codes)[number];
  /** The application error code the peer sent, as on the wire. */
  readonly wireCode: number;
  /** Makes the error. */
  constructor(kind: StreamErrorKind, wireCode: number, message: string, options?: ErrorOptions) {
    super(kind === "reset" ? "stream_reset" : "stream_stopped", message, options);
    this.wireCode = wireCode;
  }
}

/**
 * A stream operation failed because its session is gone: closed by either
 * side, or the connection was lost.
 */
export class SessionClosedError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["closed"] as const;
  /** Stable code for callers that branch. */
  declare readonly code: "closed";
  /** Makes the error. */
  constructor(message: string, options?: ErrorOptions) {
    super("closed", message, options);
  }
}
