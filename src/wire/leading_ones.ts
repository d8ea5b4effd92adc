/**
 * The leading-ones varint of draft-ietf-moq-transport 17 and later: the
 * count of leading 1 bits in the first byte gives the length (0 → 1 byte,
 * 7 bits; 10 → 2 bytes, 14 bits; ... 11111110 → 8 bytes, 56 bits;
 * 11111111 → 9 bytes, 64 bits). QUIC varints (`varint.ts`) stay the
 * default everywhere else.
 */
import { DecodeError } from "./decode_error.ts";

const MAX = (1n << 64n) - 1n;

/** Bytes of a leading-ones varint, from its first byte. */
export function leadingOnesSize(first: number): number {
  let ones = 0;
  while (ones < 8 && (first & (0x80 >> ones)) !== 0) ones++;
  return ones <= 6 ? ones + 1 : ones === 7 ? 8 : 9;
}

/** Encodes `value` (0..2^64-1) as a leading-ones varint, in its shortest form. */
export function encodeLeadingOnes(value: number | bigint): Uint8Array<ArrayBuffer> {
  const v = BigInt(value);
  if (v < 0n || v > MAX) throw new RangeError(`Cannot encode varint "${value}": out of range`);
  // Lengths 1 to 6 carry 7 * n bits behind n - 1 ones; 7 bytes is skipped (draft 17 reserves it).
  for (let n = 1; n <= 6; n++) {
    if (v < 1n << BigInt(7 * n)) {
      const out = new Uint8Array(n);
      let rest = v;
      for (let i = n - 1; i >= 1; i--) {
        out[i] = Number(rest & 0xffn);
        rest >>= 8n;
      }
      out[0] = ((0xff00 >> (n - 1)) & 0xff) | Number(rest);
      return out;
    }
  }
  const n = v < 1n << 56n ? 8 : 9;
  const out = new Uint8Array(n);
  out[0] = n === 8 ? 0xfe : 0xff;
  let rest = v;
  for (let i = n - 1; i >= 1; i--) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

/** Decodes the leading-ones varint that `bytes` holds exactly (its length from the first byte). */
export function decodeLeadingOnes(bytes: Uint8Array): bigint {
  const first = bytes[0];
  if (first === undefined) throw new DecodeError("truncated", "Cannot read varint: no bytes");
  const n = leadingOnesSize(first);
  if (bytes.length !== n) {
    throw new DecodeError("truncated", `Cannot read varint: ${bytes.length} of ${n} bytes`);
  }
  // The bits after the length prefix in the first byte (none for the 8- and 9-byte forms).
  let v = n <= 7 ? BigInt(first & (0xff >> n)) : 0n;
  for (let i = 1; i < n; i++) v = (v << 8n) | BigInt(bytes[i]!);
  return v;
}
