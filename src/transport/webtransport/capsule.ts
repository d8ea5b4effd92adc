import { concatBytes, encodeVarint } from "../../wire/mod.ts";

/** Capsule types (RFC 9297, draft-ietf-webtrans-http3). */
export const CapsuleType = {
  DATAGRAM: 0x00,
  CLOSE_WEBTRANSPORT_SESSION: 0x2843,
  DRAIN_WEBTRANSPORT_SESSION: 0x78ae,
} as const;

/** Longest reason a CLOSE_WEBTRANSPORT_SESSION capsule may carry, in bytes. */
export const MAX_CLOSE_REASON_BYTES = 1024;

/** Encodes a capsule: type, length, value. */
export function encodeCapsule(type: number, value: Uint8Array): Uint8Array {
  return concatBytes([encodeVarint(type), encodeVarint(value.length), value]);
}

/** Encodes CLOSE_WEBTRANSPORT_SESSION with a 32-bit code and a UTF-8 reason truncated to 1024 bytes. */
export function encodeCloseCapsule(code: number, reason: string): Uint8Array {
  let text = new TextEncoder().encode(reason);
  if (text.length > MAX_CLOSE_REASON_BYTES) text = text.subarray(0, MAX_CLOSE_REASON_BYTES);
  const value = new Uint8Array(4 + text.length);
  new DataView(value.buffer).setUint32(0, code >>> 0);
  value.set(text, 4);
  return encodeCapsule(CapsuleType.CLOSE_WEBTRANSPORT_SESSION, value);
}

/** Decodes a CLOSE_WEBTRANSPORT_SESSION value; throws SyntaxError when malformed. */
export function decodeCloseCapsule(value: Uint8Array): { code: number; reason: string } {
  if (value.length < 4 || value.length > 4 + MAX_CLOSE_REASON_BYTES) {
    throw new SyntaxError(`Cannot decode CLOSE_WEBTRANSPORT_SESSION of ${value.length} bytes`);
  }
  const code = new DataView(value.buffer, value.byteOffset, 4).getUint32(0);
  const reason = new TextDecoder("utf-8", { fatal: true }).decode(value.subarray(4));
  return { code, reason };
}
