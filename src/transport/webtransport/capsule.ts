import { concatBytes, decodeVarint, encodeVarint } from "../../wire/mod.ts";
import { H3Code, H3ConnectionError } from "../h3/mod.ts";

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

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes a CLOSE_WEBTRANSPORT_SESSION value; throws SyntaxError when malformed. */
export function decodeCloseCapsule(value: Uint8Array): { code: number; reason: string } {
  if (value.length < 4 || value.length > 4 + MAX_CLOSE_REASON_BYTES) {
    throw new SyntaxError(`Cannot decode CLOSE_WEBTRANSPORT_SESSION of ${value.length} bytes`);
  }
  const code = new DataView(value.buffer, value.byteOffset, 4).getUint32(0);
  try {
    return { code, reason: utf8.decode(value.subarray(4)) };
  } catch {
    throw new SyntaxError("Cannot decode CLOSE_WEBTRANSPORT_SESSION: reason is not UTF-8");
  }
}

/** A capsule the session acts on; others (GREASE, datagrams) are skipped. */
export type Capsule =
  | { readonly type: "close"; readonly code: number; readonly reason: string }
  | { readonly type: "drain" };

/** Most bytes of an unfinished capsule held while waiting for the rest. */
export const MAX_BUFFERED_CAPSULE = 4096;

/**
 * Parses the capsule stream carried in a CONNECT stream's DATA frames, one
 * piece of data at a time (capsules may straddle frames). Unknown capsules
 * are dropped without buffering their values. Malformed or oversized input
 * throws H3ConnectionError (MESSAGE_ERROR or EXCESSIVE_LOAD).
 */
export class CapsuleParser {
  #pending: Uint8Array = new Uint8Array(0);
  #skip = 0;

  /** Feeds the next data; returns the capsules it completed. */
  push(data: Uint8Array): Capsule[] {
    if (this.#skip > 0) {
      const n = Math.min(this.#skip, data.length);
      this.#skip -= n;
      data = data.subarray(n);
    }
    if (data.length === 0) return [];
    const buf = this.#pending.length === 0 ? data : concatBytes([this.#pending, data]);
    const out: Capsule[] = [];
    let o = 0;
    for (;;) {
      const type = decodeVarint(buf, o);
      if (!type) break;
      const len = decodeVarint(buf, o + type.length);
      if (!len) break;
      const start = o + type.length + len.length;
      if (type.value === CapsuleType.CLOSE_WEBTRANSPORT_SESSION) {
        if (len.value > 4 + MAX_CLOSE_REASON_BYTES || len.value < 4) {
          throw new H3ConnectionError(H3Code.MESSAGE_ERROR, "Malformed CLOSE_WEBTRANSPORT_SESSION");
        }
        if (buf.length < start + len.value) break;
        try {
          out.push({
            type: "close",
            ...decodeCloseCapsule(buf.subarray(start, start + len.value)),
          });
        } catch (err) {
          throw new H3ConnectionError(H3Code.MESSAGE_ERROR, (err as Error).message);
        }
        o = start + len.value;
      } else if (type.value === CapsuleType.DRAIN_WEBTRANSPORT_SESSION) {
        if (len.value !== 0) {
          throw new H3ConnectionError(H3Code.MESSAGE_ERROR, "Malformed DRAIN_WEBTRANSPORT_SESSION");
        }
        out.push({ type: "drain" });
        o = start;
      } else {
        // Unknown (e.g. GREASE) capsule: drop its value, possibly across frames.
        const have = buf.length - start;
        if (have >= len.value) {
          o = start + len.value;
        } else {
          this.#pending = new Uint8Array(0);
          this.#skip = len.value - have;
          return out;
        }
      }
    }
    const rest = buf.subarray(o);
    if (rest.length > MAX_BUFFERED_CAPSULE) {
      throw new H3ConnectionError(H3Code.EXCESSIVE_LOAD, "Capsule header too large");
    }
    // Keep a copy: `data` may be a view of a buffer the stream reuses.
    this.#pending = rest.slice();
    return out;
  }
}
