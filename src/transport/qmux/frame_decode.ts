/**
 * Decoding one WebSocket message into QMux frames. A QMux message carries
 * one or more frames (qmux-00 peers send one, qmux-01/02 records may hold
 * several; PADDING is skipped); a legacy `webtransport` message is exactly
 * one frame with a raw type byte. Malformed bytes and unknown frame types
 * throw {@linkcode QMuxProtocolError} with FRAME_ENCODING_ERROR.
 */
import { DecodeError, Decoder } from "../../wire/mod.ts";
import { QMuxProtocolError, TransportCode } from "./errors.ts";
import { type Frame, FrameType, STREAM_FIN, STREAM_LEN, STREAM_OFF } from "./frame.ts";
import type { WireFormat } from "./subprotocol.ts";

const textDecoder = new TextDecoder("utf-8", { fatal: true });
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Decodes every frame of one binary message (an empty message holds none). */
export function decodeMessage(message: Uint8Array, format: WireFormat): Frame[] {
  try {
    if (format === "webtransport") return message.length === 0 ? [] : [decodeLegacy(message)];
    const d = new Decoder(message);
    const frames: Frame[] = [];
    while (d.remaining > 0) {
      const frame = decodeOne(d);
      if (frame) frames.push(frame);
    }
    return frames;
  } catch (err) {
    if (err instanceof DecodeError) {
      throw new QMuxProtocolError(TransportCode.FRAME_ENCODING_ERROR, `Bad frame: ${err.message}`);
    }
    throw err;
  }
}

/** A limit or offset: values beyond 2^53-1 clamp (they are "unlimited" for us). */
function limit(d: Decoder, what: string): number {
  const v = d.u62(what);
  return v > MAX_SAFE ? Number.MAX_SAFE_INTEGER : Number(v);
}

/** Application error codes are 32-bit WebTransport codes: wider values are truncated. */
function appCode(d: Decoder): number {
  return Number(d.u62("error code") & 0xffff_ffffn);
}

function reason(bytes: Uint8Array): string {
  try {
    return textDecoder.decode(bytes);
  } catch {
    throw new DecodeError("invalid", "Cannot read close reason: not UTF-8");
  }
}

function decodeOne(d: Decoder): Frame | undefined {
  const type = d.u62("frame type");
  if (type >= 0x08n && type <= 0x0fn) {
    const bits = Number(type);
    const id = d.u53("stream id");
    const offset = bits & STREAM_OFF ? d.u53("stream offset") : undefined;
    const data = bits & STREAM_LEN ? d.bytes(d.u53("stream length"), "stream data") : d.rest();
    return { type: "stream", id, offset, data, fin: (bits & STREAM_FIN) !== 0 };
  }
  return decodeControl(d, type);
}

// Every frame but STREAM (the hot one, decoded first): undefined for PADDING.
function decodeControl(d: Decoder, type: bigint): Frame | undefined {
  switch (type) {
    case BigInt(FrameType.PADDING):
      return undefined;
    case BigInt(FrameType.RESET_STREAM):
      return {
        type: "reset_stream",
        id: d.u53("stream id"),
        code: appCode(d),
        finalSize: d.u53("final size"),
      };
    case BigInt(FrameType.RESET_STREAM_AT):
      return {
        type: "reset_stream",
        id: d.u53("stream id"),
        code: appCode(d),
        finalSize: d.u53("final size"),
        reliableSize: d.u53("reliable size"),
      };
    case BigInt(FrameType.STOP_SENDING):
      return { type: "stop_sending", id: d.u53("stream id"), code: appCode(d) };
    case BigInt(FrameType.MAX_DATA):
      return { type: "max_data", max: limit(d, "maximum data") };
    case BigInt(FrameType.MAX_STREAM_DATA):
      return { type: "max_stream_data", id: d.u53("stream id"), max: limit(d, "maximum data") };
    case BigInt(FrameType.MAX_STREAMS_BIDI):
    case BigInt(FrameType.MAX_STREAMS_UNI):
      return {
        type: "max_streams",
        bidi: type === BigInt(FrameType.MAX_STREAMS_BIDI),
        max: limit(d, "maximum streams"),
      };
    case BigInt(FrameType.DATA_BLOCKED):
      return { type: "data_blocked", limit: limit(d, "limit") };
    case BigInt(FrameType.STREAM_DATA_BLOCKED):
      return { type: "stream_data_blocked", id: d.u53("stream id"), limit: limit(d, "limit") };
    case BigInt(FrameType.STREAMS_BLOCKED_BIDI):
    case BigInt(FrameType.STREAMS_BLOCKED_UNI):
      return {
        type: "streams_blocked",
        bidi: type === BigInt(FrameType.STREAMS_BLOCKED_BIDI),
        limit: limit(d, "limit"),
      };
    case BigInt(FrameType.CONNECTION_CLOSE):
      return {
        type: "connection_close",
        code: limit(d, "error code"),
        frameType: limit(d, "frame type"),
        reason: reason(d.lengthPrefixed("reason", 65_536)),
      };
    case BigInt(FrameType.APPLICATION_CLOSE):
      return {
        type: "application_close",
        code: limit(d, "error code"),
        reason: reason(d.lengthPrefixed("reason", 65_536)),
      };
    case BigInt(FrameType.DATAGRAM):
      return { type: "datagram", data: d.rest(), withLength: false };
    case BigInt(FrameType.DATAGRAM_LEN):
      return { type: "datagram", data: d.lengthPrefixed("datagram", 1 << 24), withLength: true };
    case FrameType.QX_TRANSPORT_PARAMETERS:
      return { type: "transport_parameters", payload: d.lengthPrefixed("parameters", 65_536) };
    case FrameType.QX_PING_REQUEST:
    case FrameType.QX_PING_RESPONSE:
      return {
        type: "ping",
        response: type === FrameType.QX_PING_RESPONSE,
        sequence: d.u62("ping sequence"),
      };
  }
  throw new QMuxProtocolError(
    TransportCode.FRAME_ENCODING_ERROR,
    `Unknown frame type "0x${type.toString(16)}"`,
  );
}

function decodeLegacy(message: Uint8Array): Frame {
  const d = new Decoder(message);
  const type = d.u8("frame type");
  switch (type) {
    case FrameType.STREAM:
    case FrameType.STREAM | STREAM_FIN:
      return {
        type: "stream",
        id: d.u53("stream id"),
        offset: undefined,
        data: d.rest(),
        fin: type === (FrameType.STREAM | STREAM_FIN),
      };
    case FrameType.RESET_STREAM:
      return {
        type: "reset_stream",
        id: d.u53("stream id"),
        code: appCode(d),
        finalSize: undefined,
      };
    case FrameType.STOP_SENDING:
      return { type: "stop_sending", id: d.u53("stream id"), code: appCode(d) };
    case FrameType.APPLICATION_CLOSE:
    case FrameType.CONNECTION_CLOSE: {
      const code = limit(d, "error code");
      const text = reason(d.rest());
      return type === FrameType.APPLICATION_CLOSE
        ? { type: "application_close", code, reason: text }
        : { type: "connection_close", code, frameType: 0, reason: text };
    }
  }
  throw new QMuxProtocolError(
    TransportCode.FRAME_ENCODING_ERROR,
    `Unknown frame type "0x${type.toString(16)}"`,
  );
}
