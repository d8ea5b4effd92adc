/**
 * QMux's connection-level errors. A peer's bytes that break the protocol end
 * the whole QMux session with CONNECTION_CLOSE carrying a QUIC transport
 * error code (RFC 9000 §20.1), as draft-ietf-quic-qmux reuses them.
 */

import { SluiceError } from "../../errors/mod.ts";

/** QUIC transport error codes used in CONNECTION_CLOSE (RFC 9000 §20.1). */
export const TransportCode = {
  NO_ERROR: 0x00,
  INTERNAL_ERROR: 0x01,
  FLOW_CONTROL_ERROR: 0x03,
  STREAM_LIMIT_ERROR: 0x04,
  STREAM_STATE_ERROR: 0x05,
  FINAL_SIZE_ERROR: 0x06,
  FRAME_ENCODING_ERROR: 0x07,
  TRANSPORT_PARAMETER_ERROR: 0x08,
  PROTOCOL_VIOLATION: 0x0a,
} as const;

/** WebSocket close codes (RFC 6455 §7.4.1) sent after a CONNECTION_CLOSE. */
export const WebSocketCode = {
  NORMAL: 1000,
  PROTOCOL_ERROR: 1002,
  UNSUPPORTED_DATA: 1003,
  POLICY_VIOLATION: 1008,
  MESSAGE_TOO_BIG: 1009,
} as const;

/**
 * The peer broke the QMux protocol: the session ends with CONNECTION_CLOSE
 * (`code`, a QUIC transport error code) and a WebSocket close (`wsCode`).
 */
export class QMuxProtocolError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["protocol_violation"] as const;
  /** Stable code: the peer broke QMux (which rule says {@linkcode wireCode}). */
  declare readonly code: "protocol_violation";
  /** QUIC transport error code for CONNECTION_CLOSE. */
  readonly wireCode: number;
  /** WebSocket close code that follows it. */
  readonly wsCode: number;
  /** Makes the error. */
  constructor(wireCode: number, message: string, wsCode: number = WebSocketCode.PROTOCOL_ERROR) {
    super("protocol_violation", message);
    this.wireCode = wireCode;
    this.wsCode = wsCode;
  }
}

/**
 * A WebSocket handshake did not produce a QMux session: refused by the
 * server, unreachable, or answered with a subprotocol we did not offer.
 */
export class QMuxConnectError extends SluiceError {
  /** The codes this class carries: refused by the server (a status), or not reached. */
  static readonly codes = ["refused", "network"] as const;
  /** Stable code: `refused` when the server answered with a status, else `network`. */
  declare readonly code: (typeof QMuxConnectError.codes)[number];
  /** The HTTP status when the server refused and the runtime reported it. */
  readonly status: number | undefined;
  /** Makes the error. */
  constructor(message: string, status?: number, options?: ErrorOptions) {
    super(status === undefined ? "network" : "refused", message, options);
    this.status = status;
  }
}
