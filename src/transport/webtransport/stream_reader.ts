import { decodeVarint } from "../../wire/mod.ts";

/** The stream ended in the middle of a structure. */
export class TruncatedError extends Error {
  /** Creates the error. */
  constructor(what: string) {
    super(`Stream ended inside ${what}`);
    this.name = "TruncatedError";
  }
}

const EMPTY = new Uint8Array(0);

/** Buffered reader over a byte stream for parsing HTTP/3 frames and capsules. */
export class StreamReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf: Uint8Array;
  #pos = 0;
  #eof = false;

  /** Wraps `reader`; `initial` holds bytes already taken from the stream. */
  constructor(reader: ReadableStreamDefaultReader<Uint8Array>, initial: Uint8Array = EMPTY) {
    this.#reader = reader;
    this.#buf = initial;
  }

  get #available(): number {
    return this.#buf.length - this.#pos;
  }

  /** Ensures `n` buffered bytes; false when the stream ends first. */
  async #fill(n: number): Promise<boolean> {
    while (this.#available < n) {
      if (this.#eof) return false;
      const { value, done } = await this.#reader.read();
      if (done) {
        this.#eof = true;
        return false;
      }
      if (value.length === 0) continue;
      const rest = this.#buf.subarray(this.#pos);
      if (rest.length === 0) {
        this.#buf = value;
      } else {
        const merged = new Uint8Array(rest.length + value.length);
        merged.set(rest);
        merged.set(value, rest.length);
        this.#buf = merged;
      }
      this.#pos = 0;
    }
    return true;
  }

  /** Reads a varint; undefined when the stream ends cleanly before it, TruncatedError inside it. */
  async varint(what = "a varint"): Promise<number | undefined> {
    if (!(await this.#fill(1))) return undefined;
    const len = 1 << ((this.#buf[this.#pos] ?? 0) >> 6);
    if (!(await this.#fill(len))) throw new TruncatedError(what);
    const v = decodeVarint(this.#buf, this.#pos);
    if (!v) throw new TruncatedError(what);
    this.#pos += v.length;
    return v.value;
  }

  /** Reads one byte; undefined at the end of the stream. */
  async u8(): Promise<number | undefined> {
    if (!(await this.#fill(1))) return undefined;
    return this.#buf[this.#pos++];
  }

  /** Reads exactly `n` bytes or throws TruncatedError. */
  async bytes(n: number, what = "a frame"): Promise<Uint8Array> {
    if (!(await this.#fill(n))) throw new TruncatedError(what);
    const out = this.#buf.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    return out;
  }

  /** Discards exactly `n` bytes without buffering them all, or throws TruncatedError. */
  async skip(n: number, what = "a frame"): Promise<void> {
    let left = n;
    while (left > 0) {
      if (this.#available === 0 && !(await this.#fill(1))) throw new TruncatedError(what);
      const take = Math.min(left, this.#available);
      this.#pos += take;
      left -= take;
    }
  }

  /** Hands out up to `max` buffered or newly read bytes; undefined at the end. */
  async chunk(max: number): Promise<Uint8Array | undefined> {
    if (this.#available === 0 && !(await this.#fill(1))) return undefined;
    const take = Math.min(max, this.#available);
    const out = this.#buf.subarray(this.#pos, this.#pos + take);
    this.#pos += take;
    return out;
  }

  /** Removes and returns the bytes read ahead but not yet consumed. */
  takeBuffered(): Uint8Array {
    const out = this.#buf.subarray(this.#pos);
    this.#buf = EMPTY;
    this.#pos = 0;
    return out;
  }

  /** The underlying reader (for handing the rest of the stream on). */
  get reader(): ReadableStreamDefaultReader<Uint8Array> {
    return this.#reader;
  }

  /** Cancels the underlying stream (STOP_SENDING). Never throws. */
  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }
}
