/**
 * QMux frames (QUIC v1 encodings, RFC 9000 §19, plus the QX_ frames of
 * draft-ietf-quic-qmux) and the legacy `webtransport` form of @moq/qmux
 * 0.0.6 (one raw type byte, no offsets, no flow control): the frame values
 * and their encoding. Decoding is in `frame_decode.ts`.
 */
import { Encoder, varintSize, writeVarint } from "../../wire/mod.ts";
import type { WireFormat } from "./subprotocol.ts";

/** Frame type codes. */
export const FrameType = {
  PADDING: 0x00,
  RESET_STREAM: 0x04,
  STOP_SENDING: 0x05,
  STREAM: 0x08,
  MAX_DATA: 0x10,
  MAX_STREAM_DATA: 0x11,
  MAX_STREAMS_BIDI: 0x12,
  MAX_STREAMS_UNI: 0x13,
  DATA_BLOCKED: 0x14,
  STREAM_DATA_BLOCKED: 0x15,
  STREAMS_BLOCKED_BIDI: 0x16,
  STREAMS_BLOCKED_UNI: 0x17,
  CONNECTION_CLOSE: 0x1c,
  APPLICATION_CLOSE: 0x1d,
  RESET_STREAM_AT: 0x24,
  DATAGRAM: 0x30,
  DATAGRAM_LEN: 0x31,
  QX_TRANSPORT_PARAMETERS: 0x3f5153300d0a0d0an,
  QX_PING_REQUEST: 0x348c67529ef8c7bdn,
  QX_PING_RESPONSE: 0x348c67529ef8c7ben,
} as const;

/** STREAM type bits (RFC 9000 §19.8). */
export const STREAM_OFF = 0x04;
/** STREAM has a Length field. */
export const STREAM_LEN = 0x02;
/** STREAM ends the stream. */
export const STREAM_FIN = 0x01;

/**
 * Largest STREAM payload per frame we send: 16384 - 32, the ceiling every
 * known receiver accepts (@moq/qmux 0.0.6 refuses more than 16360).
 */
export const MAX_STREAM_PAYLOAD = 16352;

/** A decoded frame. Integers a peer controls are numbers (limits clamp at 2^53-1). */
export type Frame =
  | {
    readonly type: "stream";
    readonly id: number;
    /** Absent when the frame carried no Offset (legacy, or 0.0.6's `0x0a`): "next bytes". */
    readonly offset: number | undefined;
    readonly data: Uint8Array;
    readonly fin: boolean;
  }
  | {
    readonly type: "reset_stream";
    readonly id: number;
    readonly code: number;
    /** Absent in the legacy format. */
    readonly finalSize: number | undefined;
    /** RESET_STREAM_AT only. */
    readonly reliableSize?: number;
  }
  | { readonly type: "stop_sending"; readonly id: number; readonly code: number }
  | { readonly type: "max_data"; readonly max: number }
  | { readonly type: "max_stream_data"; readonly id: number; readonly max: number }
  | { readonly type: "max_streams"; readonly bidi: boolean; readonly max: number }
  | { readonly type: "data_blocked"; readonly limit: number }
  | { readonly type: "stream_data_blocked"; readonly id: number; readonly limit: number }
  | { readonly type: "streams_blocked"; readonly bidi: boolean; readonly limit: number }
  | {
    readonly type: "connection_close";
    readonly code: number;
    readonly frameType: number;
    readonly reason: string;
  }
  | { readonly type: "application_close"; readonly code: number; readonly reason: string }
  | { readonly type: "datagram"; readonly data: Uint8Array; readonly withLength: boolean }
  | { readonly type: "transport_parameters"; readonly payload: Uint8Array }
  | { readonly type: "ping"; readonly response: boolean; readonly sequence: bigint };

/** Control frames we send (everything but STREAM, whose header is built separately). */
export type ControlFrame = Exclude<Frame, { type: "stream" }>;

const textEncoder = new TextEncoder();
/** Longest close reason we send, in bytes (longer ones are cut). */
export const MAX_REASON_BYTES = 1024;

function reasonBytes(reason: string): Uint8Array {
  const bytes = textEncoder.encode(reason);
  return bytes.length <= MAX_REASON_BYTES ? bytes : bytes.subarray(0, MAX_REASON_BYTES);
}

/**
 * The header of a STREAM frame carrying `length` bytes at `offset`; the
 * payload follows it on the wire. QMux drafts always carry Offset and
 * Length (so frames can share a record); the legacy form is
 * `0x08|fin, id` with the data running to the end of the message.
 */
export function streamFrameHeader(
  format: WireFormat,
  id: number,
  offset: number,
  length: number,
  fin: boolean,
): Uint8Array {
  if (format === "webtransport") {
    const out = new Uint8Array(1 + varintSize(id));
    out[0] = FrameType.STREAM | (fin ? STREAM_FIN : 0);
    writeVarint(out, 1, id);
    return out;
  }
  const type = FrameType.STREAM | STREAM_OFF | STREAM_LEN | (fin ? STREAM_FIN : 0);
  const out = new Uint8Array(1 + varintSize(id) + varintSize(offset) + varintSize(length));
  out[0] = type;
  writeVarint(out, writeVarint(out, writeVarint(out, 1, id), offset), length);
  return out;
}

/** Encodes one control frame in `format`; throws RangeError for frames the format lacks. */
export function encodeFrame(format: WireFormat, frame: ControlFrame): Uint8Array {
  return format === "webtransport" ? encodeLegacy(frame) : encodeQMux(frame);
}

function encodeQMux(f: ControlFrame): Uint8Array {
  const e = new Encoder(16);
  switch (f.type) {
    case "reset_stream":
      if (f.reliableSize !== undefined) {
        e.varint(FrameType.RESET_STREAM_AT).varint(f.id).varint(f.code).varint(f.finalSize ?? 0)
          .varint(f.reliableSize);
      } else {
        e.varint(FrameType.RESET_STREAM).varint(f.id).varint(f.code).varint(f.finalSize ?? 0);
      }
      break;
    case "stop_sending":
      e.varint(FrameType.STOP_SENDING).varint(f.id).varint(f.code);
      break;
    case "max_data":
      e.varint(FrameType.MAX_DATA).varint(f.max);
      break;
    case "max_stream_data":
      e.varint(FrameType.MAX_STREAM_DATA).varint(f.id).varint(f.max);
      break;
    case "max_streams":
      e.varint(f.bidi ? FrameType.MAX_STREAMS_BIDI : FrameType.MAX_STREAMS_UNI).varint(f.max);
      break;
    case "data_blocked":
      e.varint(FrameType.DATA_BLOCKED).varint(f.limit);
      break;
    case "stream_data_blocked":
      e.varint(FrameType.STREAM_DATA_BLOCKED).varint(f.id).varint(f.limit);
      break;
    case "streams_blocked":
      e.varint(f.bidi ? FrameType.STREAMS_BLOCKED_BIDI : FrameType.STREAMS_BLOCKED_UNI)
        .varint(f.limit);
      break;
    case "connection_close":
      e.varint(FrameType.CONNECTION_CLOSE).varint(f.code).varint(f.frameType)
        .lengthPrefixed(reasonBytes(f.reason));
      break;
    case "application_close":
      e.varint(FrameType.APPLICATION_CLOSE).varint(f.code).lengthPrefixed(reasonBytes(f.reason));
      break;
    case "datagram":
      if (f.withLength) e.varint(FrameType.DATAGRAM_LEN).lengthPrefixed(f.data);
      else e.varint(FrameType.DATAGRAM).bytes(f.data);
      break;
    case "transport_parameters":
      e.varint(FrameType.QX_TRANSPORT_PARAMETERS).lengthPrefixed(f.payload);
      break;
    case "ping":
      e.varint(f.response ? FrameType.QX_PING_RESPONSE : FrameType.QX_PING_REQUEST)
        .varint(f.sequence);
      break;
  }
  return e.finish();
}

function encodeLegacy(f: ControlFrame): Uint8Array {
  const e = new Encoder(16);
  switch (f.type) {
    case "reset_stream":
      return e.u8(FrameType.RESET_STREAM).varint(f.id).varint(f.code).finish();
    case "stop_sending":
      return e.u8(FrameType.STOP_SENDING).varint(f.id).varint(f.code).finish();
    case "connection_close":
      return e.u8(FrameType.CONNECTION_CLOSE).varint(f.code).bytes(reasonBytes(f.reason)).finish();
    case "application_close":
      return e.u8(FrameType.APPLICATION_CLOSE).varint(f.code).bytes(reasonBytes(f.reason))
        .finish();
    default:
      throw new RangeError(`Cannot encode frame "${f.type}": the webtransport format lacks it`);
  }
}
