import { SluiceError } from "../../errors/mod.ts";

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

/** A connection-level HTTP/3 error: the whole QUIC connection is closed with `wireCode`. */
export class H3ConnectionError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["protocol_violation"] as const;
  /** Stable code: the peer broke HTTP/3 (which one says {@linkcode wireCode}). */
  declare readonly code: "protocol_violation";
  /** The HTTP/3 error code sent in CONNECTION_CLOSE. */
  readonly wireCode: number;
  /** Creates the error. */
  constructor(wireCode: number, message: string) {
    super("protocol_violation", message);
    this.wireCode = wireCode;
  }
}
