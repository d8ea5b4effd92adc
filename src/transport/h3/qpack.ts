import { SluiceError } from "../../errors/mod.ts";
import { huffmanDecode, huffmanEncode, huffmanEncodedLength } from "./huffman.ts";
import { STATIC_TABLE } from "./qpack_static_table.ts";

/** One header field line; names are lower-case, order and repeats are kept. */
export type HeaderField = readonly [name: string, value: string];

/** A field section QPACK could not decode (connection error QPACK_DECOMPRESSION_FAILED). */
export class QpackError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["protocol_violation"] as const;
  /** Stable code. */
  declare readonly code: "protocol_violation";
  /** Creates the error. */
  constructor(message: string) {
    super("protocol_violation", message);
  }
}

/** A field section larger than the configured limit (answered with 431, the connection lives). */
export class HeaderTooLargeError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["too_large"] as const;
  /** Stable code. */
  declare readonly code: "too_large";
  /** Creates the error. */
  constructor(message: string) {
    super("too_large", message);
  }
}

const textDecoder = new TextDecoder("utf-8", { fatal: true });
const textEncoder = new TextEncoder();

/** Field section size as RFC 9114 §4.2.2 counts it: name + value + 32 per line. */
export function fieldSectionSize(fields: readonly HeaderField[]): number {
  let size = 0;
  for (const [n, v] of fields) size += n.length + v.length + 32;
  return size;
}

class Cursor {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  byte(): number {
    const b = this.buf[this.pos];
    if (b === undefined) throw new QpackError("Cannot decode field section: truncated");
    return b;
  }
  /** Prefix integer (RFC 7541 §5.1) with an `n`-bit prefix starting at the current byte. */
  int(n: number): number {
    const max = (1 << n) - 1;
    let v = this.byte() & max;
    this.pos++;
    if (v < max) return v;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      this.pos++;
      // Past 32 bits the value is too large whatever follows; checking the
      // shift too stops zero continuation bytes from running 2 ** shift to
      // Infinity (0 * Infinity is NaN, which no comparison refuses).
      if (shift > 28) throw new QpackError("Cannot decode field section: integer too large");
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (v > 0xffffffff) throw new QpackError("Cannot decode field section: integer too large");
      if ((b & 0x80) === 0) return v;
    }
  }
  /** String literal whose H bit is bit `n` of the current byte and length has an `n`-bit prefix. */
  string(n: number, limit: number): string {
    const huffman = (this.byte() & (1 << n)) !== 0;
    const len = this.int(n);
    if (len > limit) throw new HeaderTooLargeError(`Field line of ${len} bytes exceeds the limit`);
    if (this.pos + len > this.buf.length) {
      throw new QpackError("Cannot decode field section: string runs past the end");
    }
    const raw = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    try {
      return textDecoder.decode(huffman ? huffmanDecode(raw) : raw);
    } catch (err) {
      throw new QpackError(`Cannot decode field section: ${(err as Error).message}`);
    }
  }
}

function staticEntry(index: number): readonly [string, string] {
  const e = STATIC_TABLE[index];
  if (e === undefined) throw new QpackError(`Cannot decode field section: static index ${index}`);
  return e;
}

/**
 * Decodes a QPACK field section that uses only the static table and literals
 * (we advertise a dynamic table capacity of 0). Throws QpackError for anything
 * else and HeaderTooLargeError when the decoded size exceeds `maxSize`.
 */
export function decodeFieldSection(buf: Uint8Array, maxSize: number): HeaderField[] {
  const c = new Cursor(buf);
  const ric = c.int(8);
  if (ric !== 0) throw new QpackError(`Cannot decode field section: required insert count ${ric}`);
  c.int(7); // sign + delta base: meaningless without a dynamic table
  const fields: HeaderField[] = [];
  let size = 0;
  while (c.pos < buf.length) {
    const b = c.byte();
    let field: HeaderField;
    if (b & 0x80) {
      if ((b & 0x40) === 0) {
        throw new QpackError("Cannot decode field section: dynamic table reference");
      }
      field = staticEntry(c.int(6));
    } else if (b & 0x40) {
      if ((b & 0x10) === 0) {
        throw new QpackError("Cannot decode field section: dynamic name reference");
      }
      const name = staticEntry(c.int(4))[0];
      field = [name, c.string(7, maxSize)];
    } else if (b & 0x20) {
      const name = c.string(3, maxSize);
      field = [name, c.string(7, maxSize)];
    } else {
      throw new QpackError("Cannot decode field section: post-base reference");
    }
    size += field[0].length + field[1].length + 32;
    if (size > maxSize) {
      throw new HeaderTooLargeError(`Field section exceeds ${maxSize} bytes`);
    }
    fields.push(field);
  }
  return fields;
}

function writeInt(out: number[], n: number, flags: number, value: number): void {
  const max = (1 << n) - 1;
  if (value < max) {
    out.push(flags | value);
    return;
  }
  out.push(flags | max);
  let v = value - max;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

function writeString(out: number[], n: number, flags: number, text: string): void {
  const raw = textEncoder.encode(text);
  const hlen = huffmanEncodedLength(raw);
  if (hlen < raw.length) {
    writeInt(out, n, flags | (1 << n), hlen);
    for (const b of huffmanEncode(raw)) out.push(b);
  } else {
    writeInt(out, n, flags, raw.length);
    for (const b of raw) out.push(b);
  }
}

/** Encodes a field section with the static table and literals only (no dynamic table). */
export function encodeFieldSection(fields: readonly HeaderField[]): Uint8Array {
  const out: number[] = [0, 0];
  for (const [name, value] of fields) {
    let nameIndex = -1;
    let fullIndex = -1;
    for (let i = 0; i < STATIC_TABLE.length; i++) {
      const e = STATIC_TABLE[i];
      if (e?.[0] !== name) continue;
      if (nameIndex < 0) nameIndex = i;
      if (e[1] === value) {
        fullIndex = i;
        break;
      }
    }
    if (fullIndex >= 0) {
      writeInt(out, 6, 0xc0, fullIndex);
    } else if (nameIndex >= 0) {
      writeInt(out, 4, 0x50, nameIndex);
      writeString(out, 7, 0, value);
    } else {
      writeString(out, 3, 0x20, name);
      writeString(out, 7, 0, value);
    }
  }
  return Uint8Array.from(out);
}
