import { varintSize, writeVarint } from "./varint.ts";

const encoder = new TextEncoder();

/** A growable byte writer for building messages. */
export class Encoder {
  #buf: Uint8Array<ArrayBuffer>;
  #len = 0;

  /** Starts with room for `capacity` bytes. */
  constructor(capacity = 64) {
    this.#buf = new Uint8Array(capacity);
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#len;
  }

  /** Appends a QUIC varint. */
  varint(value: number | bigint): this {
    this.#room(8);
    this.#len = writeVarint(this.#buf, this.#len, value);
    return this;
  }

  /** Appends one raw byte (0..255). */
  u8(value: number): this {
    if (!Number.isInteger(value) || value < 0 || value > 255) {
      throw new RangeError(`Cannot encode byte "${value}": outside 0..255`);
    }
    this.#room(1);
    this.#buf[this.#len++] = value;
    return this;
  }

  /** Appends a bool byte (0 or 1). */
  bool(value: boolean): this {
    return this.u8(value ? 1 : 0);
  }

  /** Appends raw bytes. */
  bytes(value: Uint8Array): this {
    this.#room(value.length);
    this.#buf.set(value, this.#len);
    this.#len += value.length;
    return this;
  }

  /** Appends a varint length then the bytes. */
  lengthPrefixed(value: Uint8Array): this {
    return this.varint(value.length).bytes(value);
  }

  /** Appends a varint length then the UTF-8 text. */
  string(value: string): this {
    return this.lengthPrefixed(encoder.encode(value));
  }

  /** Appends another encoder's bytes as a length-prefixed message. */
  message(body: Encoder): this {
    const bytes = body.finish();
    this.#room(varintSize(bytes.length) + bytes.length);
    return this.lengthPrefixed(bytes);
  }

  /** The bytes written (a view; do not write after taking it). */
  finish(): Uint8Array<ArrayBuffer> {
    return this.#buf.subarray(0, this.#len);
  }
}
