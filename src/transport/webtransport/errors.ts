import { StreamError, type StreamErrorKind } from "../errors.ts";

/** HTTP/3, QPACK and HTTP-datagram error codes (RFC 9114 §8.1, RFC 9204 §6, RFC 9297 §5.2). */
export const H3Code = {
  NO_ERROR: 0x100,
  GENERAL_PROTOCOL_ERROR: 0x101,
  INTERNAL_ERROR: 0x102,
  STREAM_CREATION_ERROR: 0x103,
  CLOSED_CRITICAL_STREAM: 0x104,
  FRAME_UNEXPECTED: 0x105,
  FRAME_ERROR: 0x106,
  EXCESSIVE_LOAD: 0x107,
  ID_ERROR: 0x108,
  SETTINGS_ERROR: 0x109,
  MISSING_SETTINGS: 0x10a,
  REQUEST_REJECTED: 0x10b,
  REQUEST_CANCELLED: 0x10c,
  REQUEST_INCOMPLETE: 0x10d,
  MESSAGE_ERROR: 0x10e,
  CONNECT_ERROR: 0x10f,
  QPACK_DECOMPRESSION_FAILED: 0x200,
  QPACK_ENCODER_STREAM_ERROR: 0x201,
  QPACK_DECODER_STREAM_ERROR: 0x202,
  DATAGRAM_ERROR: 0x33,
  /** WebTransport: stream rejected because its session's CONNECT was not answered in time. */
  WT_BUFFERED_STREAM_REJECTED: 0x3994bd84,
  /** WebTransport: the stream's session is gone. */
  WT_SESSION_GONE: 0x170d7b68,
} as const;

/** A connection-level HTTP/3 error: the whole QUIC connection is closed with `code`. */
export class H3ConnectionError extends Error {
  /** The HTTP/3 error code sent in CONNECTION_CLOSE. */
  readonly code: number;
  /** Creates the error. */
  constructor(code: number, message: string) {
    super(message);
    this.name = "H3ConnectionError";
    this.code = code;
  }
}

/** A CONNECT refused by the server: carries the HTTP status the server answered. */
export class WebTransportRefusedError extends Error {
  /** Stable kind for callers that branch. */
  readonly kind = "refused" as const;
  /** HTTP status code of the refusal (e.g. 401, 403, 404, 400). */
  readonly status: number;
  /** Creates the error. */
  constructor(status: number, message?: string) {
    super(message ?? `WebTransport session refused with status ${status}`);
    this.name = "WebTransportRefusedError";
    this.status = status;
  }
}

/**
 * The peer reset or stopped a WebTransport stream: a {@linkcode StreamError}
 * whose `code` is the WebTransport application code (already mapped back
 * from the HTTP/3 range).
 */
export class WebTransportStreamError extends StreamError {
  /** Creates the error. */
  constructor(kind: StreamErrorKind, code: number, message: string, options?: ErrorOptions) {
    super(kind, code, message, options);
    this.name = "WebTransportStreamError";
  }
}

const WT_FIRST = 0x52e4a40fa8db;
const WT_LAST = 0x52e5ac983162;

/** Maps a 32-bit WebTransport application error code to its HTTP/3 code (draft-ietf-webtrans-http3 §4.4). */
export function wtErrorToHttp3(code: number): number {
  if (!Number.isInteger(code) || code < 0 || code > 0xffffffff) {
    throw new RangeError(`Cannot map WebTransport error code "${code}": not a 32-bit integer`);
  }
  return WT_FIRST + code + Math.floor(code / 0x1e);
}

/** Maps an HTTP/3 error code back to a WebTransport application code, or undefined when outside the range. */
export function wtErrorFromHttp3(h3: number): number | undefined {
  if (h3 < WT_FIRST || h3 > WT_LAST || (h3 - 0x21) % 0x1f === 0) return undefined;
  const d = h3 - WT_FIRST;
  return d - Math.floor(d / 0x1f);
}
