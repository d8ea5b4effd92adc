import { concatBytes } from "./concat.ts";
import { DecodeError } from "./decode_error.ts";

/** Receives the byte count of every chunk read (for per-session counters). */
export type ByteCounter = (n: number) => void;

const EMPTY = new Uint8Array(0);
const NOT_DONE: Promise<boolean> = Promise.resolve(false);
const isEnd = (filled: boolean): boolean => !filled;

// BYOB reads start small and grow while reads fill the buffer: an idle
// control stream then pins ~512 B instead of the 64 KiB a default reader's
// pending read holds in Deno's QUIC streams (measured), while bulk group
// streams quickly reach full-size reads.
const FIRST_READ = 512;
const LARGEST_READ = 64 * 1024;
// Reads shorter than this within a long byte run are copied together into chunks this large.
const GATHER = 4 * 1024;

type Source =
  | { readonly byob: true; readonly r: ReadableStreamBYOBReader }
  | { readonly byob: false; readonly r: ReadableStreamDefaultReader<Uint8Array> };

/**
 * Buffered reader over a byte stream: varints, single bytes, exact byte runs
 * and length-prefixed messages, across chunk boundaries. A FIN in the middle
 * of a field is a `DecodeError("truncated")`. moq-lite reads whole streams
 * with it; the HTTP/3 layer reads stream headers and frames, then hands the
 * rest of the stream on (`takeBuffered` and `reader`).
 */
export class StreamReader {
  readonly #reader: Source;
  #readSize = FIRST_READ;
  readonly #count: ByteCounter | undefined;
  #buf: Uint8Array = EMPTY;
  #at = 0;
  #done = false;
  #received = 0;

  /**
   * Reads from `source`, reporting received byte counts to `count`. Given a
   * stream, the reader uses BYOB reads when the stream supports them; given
   * a reader, it reads through it. Either way `reader` hands the stream on.
   */
  constructor(
    source:
      | ReadableStream<Uint8Array>
      | ReadableStreamDefaultReader<Uint8Array>
      | ReadableStreamBYOBReader,
    count?: ByteCounter,
  ) {
    this.#reader = source instanceof ReadableStream
      ? byobReader(source) ?? { byob: false, r: source.getReader() }
      : source instanceof ReadableStreamBYOBReader
      ? { byob: true, r: source }
      : { byob: false, r: source };
    this.#count = count;
  }

  get #available(): number {
    return this.#buf.length - this.#at;
  }

  /** Pulls one more chunk into the buffer; false at FIN. */
  async #fill(): Promise<boolean> {
    if (this.#done) return false;
    // The read is inline rather than in an async helper: a reader waiting for its stream's next
    // bytes (an idle subscription's control stream, for the session's whole life) then holds
    // one suspended function, not two.
    const source = this.#reader;
    // A chunk read to its end is let go before waiting: an idle control stream would otherwise
    // keep its last chunk (a 512 B read buffer) besides the one its pending read fills.
    if (this.#available === 0) {
      this.#buf = EMPTY;
      this.#at = 0;
    }
    for (;;) {
      const size = this.#readSize;
      const { value, done } = source.byob
        ? await source.r.read(new Uint8Array(size))
        : await source.r.read();
      if (done || value === undefined) {
        this.#done = true;
        return false;
      }
      if (source.byob && value.length === size && size < LARGEST_READ) this.#readSize = size * 2;
      if (value.length === 0) continue;
      this.#count?.(value.length);
      this.#received += value.length;
      if (this.#available === 0) {
        this.#buf = value;
      } else {
        const next = new Uint8Array(this.#available + value.length);
        next.set(this.#buf.subarray(this.#at));
        next.set(value, this.#available);
        this.#buf = next;
      }
      this.#at = 0;
      return true;
    }
  }

  async #need(n: number, what: string): Promise<void> {
    while (this.#available < n) {
      if (!(await this.#fill())) {
        throw new DecodeError("truncated", `Cannot read ${what}: stream ended early`);
      }
    }
  }

  /** True when the peer finished the stream and every byte was read. */
  done(): Promise<boolean> {
    // Not an async function, for the same reason as #fill's inline read.
    if (this.#available > 0) return NOT_DONE;
    return this.#fill().then(isEnd);
  }

  /** Reads a varint as a bigint. */
  async u62(what = "varint"): Promise<bigint> {
    await this.#need(1, what);
    const size = 1 << ((this.#buf[this.#at] ?? 0) >> 6);
    await this.#need(size, what);
    let v = BigInt((this.#buf[this.#at] ?? 0) & 0x3f);
    for (let i = 1; i < size; i++) v = (v << 8n) | BigInt(this.#buf[this.#at + i] ?? 0);
    this.#at += size;
    return v;
  }

  /** Reads a varint that must be ≤ 2^53-1. */
  async u53(what = "varint"): Promise<number> {
    if (this.#available === 0) await this.#need(1, what);
    const first = this.#buf[this.#at] ?? 0;
    const size = 1 << (first >> 6);
    if (size < 8) {
      if (this.#available < size) await this.#need(size, what);
      let v = first & 0x3f;
      for (let i = 1; i < size; i++) v = v * 256 + (this.#buf[this.#at + i] ?? 0);
      this.#at += size;
      return v;
    }
    const v = await this.u62(what);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError("invalid", `Cannot read ${what}: value "${v}" exceeds 2^53-1`);
    }
    return Number(v);
  }

  /** Reads exactly `n` bytes (a copy-free view when the buffer holds them). */
  async bytes(n: number, what = "bytes"): Promise<Uint8Array> {
    if (n === 0) return EMPTY;
    if (this.#available >= n) {
      const out = this.#buf.subarray(this.#at, this.#at + n);
      this.#at += n;
      return out;
    }
    // Large runs: keep the chunks as they arrive and join them once at the
    // end. Allocating `n` bytes up front would let a peer that declares a
    // large frame and sends a few bytes make us hold the declared size.
    const parts: Uint8Array[] = [];
    let filled = 0;
    // Small reads are gathered into chunks of GATHER bytes: a part per read of a trickle of
    // one-byte packets cost ~210 bytes of heap per byte received (211 MiB for 1 MiB).
    let gather: Uint8Array | undefined;
    let gathered = 0;
    const flush = (): void => {
      // A chunk cut short by a large read is copied, so it pins no more than it holds.
      if (gather && gathered > 0) {
        parts.push(
          gathered * 2 < gather.length ? gather.slice(0, gathered) : gather.subarray(0, gathered),
        );
      }
      gather = undefined;
      gathered = 0;
    };
    for (;;) {
      const take = Math.min(this.#available, n - filled);
      if (take > 0) {
        const part = this.#buf.subarray(this.#at, this.#at + take);
        if (take < GATHER) {
          if (!gather || gathered + take > gather.length) {
            flush();
            gather = new Uint8Array(Math.min(GATHER, n - filled));
          }
          gather.set(part, gathered);
          gathered += take;
        } else {
          flush();
          // A short read into a large BYOB buffer: copy, so a trickle of small
          // packets does not pin a whole read buffer each.
          parts.push(part.byteLength * 2 < part.buffer.byteLength ? part.slice() : part);
        }
      }
      this.#at += take;
      filled += take;
      if (filled === n) {
        flush();
        return parts.length === 1 ? parts[0]! : concatBytes(parts);
      }
      // The buffer was handed out whole; the next fill must not append to it.
      this.#buf = EMPTY;
      this.#at = 0;
      if (!(await this.#fill())) {
        throw new DecodeError("truncated", `Cannot read ${what}: stream ended early`);
      }
    }
  }

  /** Reads a length-prefixed message body of at most `max` bytes. */
  async message(what: string, max: number): Promise<Uint8Array> {
    const n = await this.u53(`${what} length`);
    if (n > max) {
      throw new DecodeError("too_large", `Cannot read ${what}: ${n} bytes exceeds ${max}`);
    }
    return await this.bytes(n, what);
  }

  /**
   * Reads a varint as a number, or undefined when the stream ends cleanly
   * before it. Values above 2^53-1 come out approximate: use it for
   * identifiers that are only compared or skipped (HTTP/3 frame and stream
   * types, GREASE included).
   */
  async varint(what = "varint"): Promise<number | undefined> {
    if (this.#available === 0 && !(await this.#fill())) return undefined;
    const first = this.#buf[this.#at] ?? 0;
    const size = 1 << (first >> 6);
    if (this.#available < size) await this.#need(size, what);
    let v = first & 0x3f;
    for (let i = 1; i < size; i++) v = v * 256 + (this.#buf[this.#at + i] ?? 0);
    this.#at += size;
    return v;
  }

  /** Reads one byte, or undefined at the end of the stream. */
  async u8(): Promise<number | undefined> {
    if (this.#available === 0 && !(await this.#fill())) return undefined;
    return this.#buf[this.#at++];
  }

  /** Discards exactly `n` bytes without buffering them all. */
  async skip(n: number, what = "bytes"): Promise<void> {
    let left = n;
    while (left > 0) {
      if (this.#available === 0 && !(await this.#fill())) {
        throw new DecodeError("truncated", `Cannot read ${what}: stream ended early`);
      }
      const take = Math.min(left, this.#available);
      this.#at += take;
      left -= take;
    }
  }

  /** Hands out up to `max` buffered or newly read bytes (a view); undefined at the end. */
  async chunk(max: number): Promise<Uint8Array | undefined> {
    if (this.#available === 0 && !(await this.#fill())) return undefined;
    const take = Math.min(max, this.#available);
    const out = this.#buf.subarray(this.#at, this.#at + take);
    this.#at += take;
    return out;
  }

  /** Bytes the stream delivered so far (read ahead or consumed). */
  get received(): number {
    return this.#received;
  }

  /** Bytes read ahead and not yet consumed. */
  get buffered(): number {
    return this.#available;
  }

  /** Removes and returns the bytes read ahead but not yet consumed. */
  takeBuffered(): Uint8Array {
    const out = this.#buf.subarray(this.#at);
    this.#buf = EMPTY;
    this.#at = 0;
    return out;
  }

  /**
   * The underlying reader (BYOB when the stream is a byte stream), for
   * handing the rest of the stream on after `takeBuffered`.
   */
  get reader(): ReadableStreamDefaultReader<Uint8Array> | ReadableStreamBYOBReader {
    return this.#reader.r;
  }

  /** Stops reading (STOP_SENDING); never throws. */
  cancel(): void {
    // Cancelling a stream that already ended or failed has nothing left to report.
    this.#reader.r.cancel().catch(() => {});
  }

  /** Releases the reader lock without cancelling; never throws. */
  release(): void {
    try {
      this.#reader.r.releaseLock();
    } catch {
      // already released
    }
  }
}

// Byte streams (Deno's QUIC receive streams) support BYOB reads; others do not.
function byobReader(
  stream: ReadableStream<Uint8Array>,
): { readonly byob: true; readonly r: ReadableStreamBYOBReader } | undefined {
  try {
    return { byob: true, r: stream.getReader({ mode: "byob" }) };
  } catch {
    // Not a byte stream: the caller falls back to a default reader.
    return undefined;
  }
}
