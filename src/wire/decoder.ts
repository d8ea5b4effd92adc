import { DecodeError } from "./decode_error.ts";

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Reads fields from one complete in-memory message body; never reads past it. */
export class Decoder {
  readonly #buf: Uint8Array;
  #at = 0;

  /** Decodes from `buf`. */
  constructor(buf: Uint8Array) {
    this.#buf = buf;
  }

  /** Bytes not yet read. */
  get remaining(): number {
    return this.#buf.length - this.#at;
  }

  #need(n: number, what: string): void {
    if (this.remaining < n) {
      throw new DecodeError("truncated", `Cannot read ${what}: message ends early`);
    }
  }

  /** Reads a varint as a bigint (full 62 bits). */
  u62(what = "varint"): bigint {
    this.#need(1, what);
    const first = this.#buf[this.#at] ?? 0;
    const size = 1 << (first >> 6);
    this.#need(size, what);
    let v = BigInt(first & 0x3f);
    for (let i = 1; i < size; i++) v = (v << 8n) | BigInt(this.#buf[this.#at + i] ?? 0);
    this.#at += size;
    return v;
  }

  /** Reads a varint that must fit a JS safe integer (≤ 2^53-1). */
  u53(what = "varint"): number {
    this.#need(1, what);
    const first = this.#buf[this.#at] ?? 0;
    const size = 1 << (first >> 6);
    if (size < 8) {
      this.#need(size, what);
      let v = first & 0x3f;
      for (let i = 1; i < size; i++) v = v * 256 + (this.#buf[this.#at + i] ?? 0);
      this.#at += size;
      return v;
    }
    const v = this.u62(what);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError("invalid", `Cannot read ${what}: value "${v}" exceeds 2^53-1`);
    }
    return Number(v);
  }

  /** Reads one raw byte. */
  u8(what = "byte"): number {
    this.#need(1, what);
    return this.#buf[this.#at++] ?? 0;
  }

  /** Reads a bool byte; anything but 0 or 1 is invalid. */
  bool(what = "bool"): boolean {
    const b = this.u8(what);
    if (b > 1) throw new DecodeError("invalid", `Cannot read ${what}: byte "${b}" is not 0 or 1`);
    return b === 1;
  }

  /** Reads `n` raw bytes (a view). */
  bytes(n: number, what = "bytes"): Uint8Array {
    this.#need(n, what);
    const out = this.#buf.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }

  /** Reads a varint length then that many bytes. */
  lengthPrefixed(what = "bytes", max = 1 << 20): Uint8Array {
    const n = this.u53(`${what} length`);
    if (n > max) {
      throw new DecodeError("too_large", `Cannot read ${what}: ${n} bytes exceeds ${max}`);
    }
    return this.bytes(n, what);
  }

  /** Reads a varint length then UTF-8 text. */
  string(what = "string", max = 65_536): string {
    const bytes = this.lengthPrefixed(what, max);
    try {
      return decoder.decode(bytes);
    } catch {
      throw new DecodeError("invalid", `Cannot read ${what}: not UTF-8`);
    }
  }

  /** Reads everything left. */
  rest(): Uint8Array {
    return this.bytes(this.remaining);
  }

  /** Asserts the whole message was consumed. */
  end(what: string): void {
    if (this.remaining !== 0) {
      throw new DecodeError("trailing", `Cannot decode ${what}: ${this.remaining} trailing bytes`);
    }
  }
}
