import { concatBytes, encodeVarint, varintSize, writeVarint } from "../../wire/mod.ts";

/** HTTP/3 frame types (RFC 9114 §7.2). */
export const FrameType = {
  DATA: 0x00,
  HEADERS: 0x01,
  CANCEL_PUSH: 0x03,
  SETTINGS: 0x04,
  PUSH_PROMISE: 0x05,
  GOAWAY: 0x07,
  MAX_PUSH_ID: 0x0d,
} as const;

/** Frame types reserved from HTTP/2 that must never be received (RFC 9114 §7.2.8). */
export const HTTP2_RESERVED_FRAME_TYPES: ReadonlySet<number> = new Set([0x02, 0x06, 0x08, 0x09]);

/** Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2, WebTransport). */
export const UniStreamType = {
  CONTROL: 0x00,
  PUSH: 0x01,
  QPACK_ENCODER: 0x02,
  QPACK_DECODER: 0x03,
  WEBTRANSPORT: 0x54,
} as const;

/** Signal value that starts a WebTransport bidirectional stream. */
export const WT_BIDI_SIGNAL = 0x41;

/** Encodes one HTTP/3 frame: type, length, payload. */
export function encodeFrame(type: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(varintSize(type) + varintSize(payload.length) + payload.length);
  let o = writeVarint(out, 0, type);
  o = writeVarint(out, o, payload.length);
  out.set(payload, o);
  return out;
}

/** Header bytes of a WebTransport stream: signal/type then the session id. */
export function wtStreamHeader(kind: "bidi" | "uni", sessionId: number): Uint8Array {
  return concatBytes([
    encodeVarint(kind === "bidi" ? WT_BIDI_SIGNAL : UniStreamType.WEBTRANSPORT),
    encodeVarint(sessionId),
  ]);
}

/** Frame types that may never appear on a request stream. */
export function isForbiddenOnRequestStream(type: number): boolean {
  return type === FrameType.SETTINGS || type === FrameType.GOAWAY ||
    type === FrameType.MAX_PUSH_ID ||
    type === FrameType.CANCEL_PUSH || HTTP2_RESERVED_FRAME_TYPES.has(type);
}
