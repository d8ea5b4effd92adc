/**
 * WebSocket frames (RFC 6455 §5) for sluice's own client: encoding masked
 * client frames, and parsing the server's unmasked ones out of a byte
 * buffer. Extensions are never negotiated, so RSV bits must be zero.
 */
import { SluiceError } from "../../errors/mod.ts";

/** Frame opcodes. */
export const Opcode = {
  CONTINUATION: 0x0,
  TEXT: 0x1,
  BINARY: 0x2,
  CLOSE: 0x8,
  PING: 0x9,
  PONG: 0xa,
} as const;

/** One parsed frame. */
export interface WsFrame {
  /** Last fragment of its message. */
  readonly fin: boolean;
  /** The opcode. */
  readonly opcode: number;
  /** The payload (a view into the parse buffer). */
  readonly payload: Uint8Array;
}

/** The server broke RFC 6455: the connection fails with `code` (1002 or 1009). */
export class WsProtocolError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["protocol_violation"] as const;
  /** Stable code. */
  declare readonly code: "protocol_violation";
  /** WebSocket close code. */
  readonly wireCode: number;
  /** Makes the error. */
  constructor(wireCode: number, message: string) {
    super("protocol_violation", message);
    this.wireCode = wireCode;
  }
}

/**
 * A client frame: FIN set, the payload masked with a fresh random key
 * (clients must mask, RFC 6455 §5.3), header and payload in one buffer.
 */
export function encodeClientFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const n = payload.length;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const out = new Uint8Array(2 + lengthBytes + 4 + n);
  out[0] = 0x80 | opcode;
  const view = new DataView(out.buffer);
  if (lengthBytes === 0) {
    out[1] = 0x80 | n;
  } else if (lengthBytes === 2) {
    out[1] = 0x80 | 126;
    view.setUint16(2, n);
  } else {
    out[1] = 0x80 | 127;
    view.setBigUint64(2, BigInt(n));
  }
  const at = 2 + lengthBytes;
  const mask = crypto.getRandomValues(out.subarray(at, at + 4));
  const body = out.subarray(at + 4);
  for (let i = 0; i < n; i++) body[i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

/**
 * Parses the next complete frame at the start of `buf`; undefined when more
 * bytes are needed. Returns the frame and how many bytes it took.
 */
export function parseServerFrame(
  buf: Uint8Array,
  maxPayload: number,
): { frame: WsFrame; size: number } | undefined {
  if (buf.length < 2) return undefined;
  const b0 = buf[0]!;
  const b1 = buf[1]!;
  if ((b0 & 0x70) !== 0) throw new WsProtocolError(1002, "Frame has RSV bits set");
  if ((b1 & 0x80) !== 0) throw new WsProtocolError(1002, "Server frame is masked");
  const opcode = b0 & 0x0f;
  const fin = (b0 & 0x80) !== 0;
  let length = b1 & 0x7f;
  let at = 2;
  if (length === 126) {
    if (buf.length < 4) return undefined;
    length = (buf[2]! << 8) | buf[3]!;
    at = 4;
  } else if (length === 127) {
    if (buf.length < 10) return undefined;
    const big = new DataView(buf.buffer, buf.byteOffset + 2, 8).getBigUint64(0);
    if (big > BigInt(maxPayload)) throw new WsProtocolError(1009, `Frame of ${big} bytes`);
    length = Number(big);
    at = 10;
  }
  if (opcode >= 0x8 && (length > 125 || !fin)) {
    throw new WsProtocolError(1002, "Control frame fragmented or longer than 125 bytes");
  }
  if (length > maxPayload) throw new WsProtocolError(1009, `Frame of ${length} bytes`);
  if (buf.length < at + length) return undefined;
  return { frame: { fin, opcode, payload: buf.subarray(at, at + length) }, size: at + length };
}

/** A close frame's payload: code, then the UTF-8 reason. */
export function closePayload(code: number, reason: string): Uint8Array {
  const text = new TextEncoder().encode(reason).subarray(0, 123);
  const out = new Uint8Array(2 + text.length);
  new DataView(out.buffer).setUint16(0, code);
  out.set(text, 2);
  return out;
}

/** Reads a close frame's payload (1005 when it carries no code). */
export function parseClose(payload: Uint8Array): { code: number; reason: string } {
  if (payload.length < 2) return { code: 1005, reason: "" };
  const code = (payload[0]! << 8) | payload[1]!;
  return { code, reason: new TextDecoder().decode(payload.subarray(2)) };
}
