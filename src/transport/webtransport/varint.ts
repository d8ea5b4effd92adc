/** Largest value a QUIC varint can carry (2^62 - 1). */
export const MAX_VARINT: bigint = (1n << 62n) - 1n;

/** Number of bytes the minimal QUIC varint encoding of `value` takes. */
export function varintLength(value: number | bigint): number {
  const v = BigInt(value);
  if (v < 0n || v > MAX_VARINT) throw new RangeError(`Cannot encode varint "${v}": out of range`);
  if (v < 0x40n) return 1;
  if (v < 0x4000n) return 2;
  if (v < 0x40000000n) return 4;
  return 8;
}

/** Writes the minimal QUIC varint (RFC 9000 §16) for `value` into `out` at `offset`; returns the new offset. */
export function writeVarint(out: Uint8Array, offset: number, value: number | bigint): number {
  const len = varintLength(value);
  if (len <= 4) {
    let v = Number(value);
    for (let i = len - 1; i >= 0; i--) {
      out[offset + i] = v & 0xff;
      v = Math.floor(v / 256);
    }
  } else {
    let v = BigInt(value);
    for (let i = 7; i >= 0; i--) {
      out[offset + i] = Number(v & 0xffn);
      v >>= 8n;
    }
  }
  out[offset] = (out[offset] ?? 0) | ([0, 0x00, 0x40, 0, 0x80, 0, 0, 0, 0xc0][len] ?? 0);
  return offset + len;
}

/** Encodes `value` as a minimal QUIC varint. */
export function encodeVarint(value: number | bigint): Uint8Array {
  const out = new Uint8Array(varintLength(value));
  writeVarint(out, 0, value);
  return out;
}

/** Length of a varint from its first byte. */
export function varintLengthFromFirstByte(first: number): number {
  return 1 << (first >> 6);
}

/**
 * Decodes a varint at `offset` as a bigint (exact for all 62-bit values), or
 * undefined when `buf` ends before the varint does.
 */
export function decodeVarintBig(
  buf: Uint8Array,
  offset: number,
): { value: bigint; length: number } | undefined {
  const first = buf[offset];
  if (first === undefined) return undefined;
  const length = varintLengthFromFirstByte(first);
  if (offset + length > buf.length) return undefined;
  let v = BigInt(first & 0x3f);
  for (let i = 1; i < length; i++) v = (v << 8n) | BigInt(buf[offset + i] ?? 0);
  return { value: v, length };
}

/**
 * Decodes a varint at `offset` as a number (exact up to 2^53; larger values
 * are approximate, which only matters for GREASE identifiers we skip).
 */
export function decodeVarint(
  buf: Uint8Array,
  offset: number,
): { value: number; length: number } | undefined {
  const first = buf[offset];
  if (first === undefined) return undefined;
  const length = varintLengthFromFirstByte(first);
  if (offset + length > buf.length) return undefined;
  let v = first & 0x3f;
  for (let i = 1; i < length; i++) v = v * 256 + (buf[offset + i] ?? 0);
  return { value: v, length };
}
