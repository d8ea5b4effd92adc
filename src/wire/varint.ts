/** Largest value a QUIC varint holds: 2^62 - 1. */
export const VARINT_MAX: bigint = (1n << 62n) - 1n;

/** Number of bytes the minimal QUIC varint encoding of `value` takes. */
export function varintSize(value: number | bigint): 1 | 2 | 4 | 8 {
  const v = typeof value === "bigint" ? value : checkNumber(value);
  if (v < 0x40) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x4000_0000) return 4;
  if (typeof v === "number" || v <= VARINT_MAX) return 8;
  throw new RangeError(`Cannot encode varint "${v}": exceeds 2^62-1`);
}

function checkNumber(value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`Cannot encode varint "${value}": not a non-negative safe integer`);
  }
  return value;
}

/** Writes the minimal QUIC varint of `value` into `out` at `at`; returns the new offset. */
export function writeVarint(out: Uint8Array, at: number, value: number | bigint): number {
  if (typeof value === "bigint") {
    if (value < 0n || value > VARINT_MAX) {
      throw new RangeError(`Cannot encode varint "${value}": outside 0..2^62-1`);
    }
    if (value <= BigInt(Number.MAX_SAFE_INTEGER)) return writeVarint(out, at, Number(value));
    const hi = Number(value >> 32n) | 0xc000_0000;
    const lo = Number(value & 0xffff_ffffn);
    new DataView(out.buffer, out.byteOffset + at, 8).setUint32(0, hi >>> 0);
    new DataView(out.buffer, out.byteOffset + at, 8).setUint32(4, lo >>> 0);
    return at + 8;
  }
  const size = varintSize(value);
  if (size === 1) {
    out[at] = value;
  } else if (size === 2) {
    out[at] = 0x40 | (value >> 8);
    out[at + 1] = value & 0xff;
  } else if (size === 4) {
    out[at] = 0x80 | (value >>> 24);
    out[at + 1] = (value >>> 16) & 0xff;
    out[at + 2] = (value >>> 8) & 0xff;
    out[at + 3] = value & 0xff;
  } else {
    const hi = Math.floor(value / 0x1_0000_0000);
    const lo = value >>> 0;
    out[at] = 0xc0 | (hi >>> 24);
    out[at + 1] = (hi >>> 16) & 0xff;
    out[at + 2] = (hi >>> 8) & 0xff;
    out[at + 3] = hi & 0xff;
    out[at + 4] = lo >>> 24;
    out[at + 5] = (lo >>> 16) & 0xff;
    out[at + 6] = (lo >>> 8) & 0xff;
    out[at + 7] = lo & 0xff;
  }
  return at + size;
}

/** Encodes one varint into a fresh array. */
export function encodeVarint(value: number | bigint): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(8);
  return out.slice(0, writeVarint(out, 0, value));
}

/** Zigzag-encodes a signed integer before its varint (moq-lite-05 frame timestamp deltas). */
export function zigzagEncode(value: bigint): bigint {
  return value >= 0n ? value << 1n : ((-value) << 1n) - 1n;
}

/** Decodes a zigzag-encoded integer. */
export function zigzagDecode(value: bigint): bigint {
  return (value & 1n) === 0n ? value >> 1n : -((value + 1n) >> 1n);
}

/**
 * Decodes the varint at `at` as a bigint (exact for all 62-bit values), or
 * undefined when `buf` ends before the varint does.
 */
export function decodeVarintBig(
  buf: Uint8Array,
  at: number,
): { value: bigint; length: number } | undefined {
  const first = buf[at];
  if (first === undefined) return undefined;
  const length = 1 << (first >> 6);
  if (at + length > buf.length) return undefined;
  let v = BigInt(first & 0x3f);
  for (let i = 1; i < length; i++) v = (v << 8n) | BigInt(buf[at + i] ?? 0);
  return { value: v, length };
}

/**
 * Decodes the varint at `at` as a number (exact up to 2^53-1; larger values
 * are approximate, which only matters for identifiers that are skipped, such
 * as GREASE), or undefined when `buf` ends before the varint does.
 */
export function decodeVarint(
  buf: Uint8Array,
  at: number,
): { value: number; length: number } | undefined {
  const first = buf[at];
  if (first === undefined) return undefined;
  const length = 1 << (first >> 6);
  if (at + length > buf.length) return undefined;
  let v = first & 0x3f;
  for (let i = 1; i < length; i++) v = v * 256 + (buf[at + i] ?? 0);
  return { value: v, length };
}
