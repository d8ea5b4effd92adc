// A video-shaped frame carries the wall-clock time it was written in its first
// 8 bytes; subscribers parse group streams as they arrive and time each frame.

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A frame of `size` bytes stamped with the time it is written. */
export function stampedFrame(size: number): Uint8Array<ArrayBuffer> {
  const frame = new Uint8Array(size);
  new DataView(frame.buffer).setFloat64(0, wallMs());
  return frame;
}

type Step = "header-length" | "header" | "timestamp" | "length" | "payload";

/**
 * Reads a moq-lite-05 group stream past its type byte, chunk by chunk: the
 * GROUP header, then frames (timestamp delta, length, payload). Calls
 * `onFrame` with each frame's stamped send time once its first 8 bytes are in,
 * and its size; payload bytes after the stamp are skipped without copying.
 */
export class GroupStreamParser {
  readonly #onFrame: (sentAt: number, size: number) => void;
  #step: Step = "header-length";
  // The varint being read: its value, and bytes still to come (0: none started).
  #value = 0;
  #varintLeft = 0;
  #skip = 0;
  #size = 0;
  readonly #stamp = new Uint8Array(8);
  #stamped = 0;

  /** A parser reporting each frame to `onFrame`. */
  constructor(onFrame: (sentAt: number, size: number) => void) {
    this.#onFrame = onFrame;
  }

  /** Takes the next bytes of the stream. */
  push(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.#step === "header" || this.#step === "payload") {
        i = this.#body(chunk, i);
        continue;
      }
      if (!this.#varint(chunk[i++]!)) continue;
      this.#took(this.#value);
    }
  }

  // A varint byte; true when the varint is complete (in #value).
  #varint(byte: number): boolean {
    if (this.#varintLeft === 0) {
      this.#varintLeft = (1 << (byte >> 6)) - 1;
      this.#value = byte & 0x3f;
    } else {
      this.#value = this.#value * 256 + byte;
      this.#varintLeft--;
    }
    return this.#varintLeft === 0;
  }

  // A complete varint, by step.
  #took(value: number): void {
    if (this.#step === "header-length") {
      this.#skip = value;
      this.#step = value > 0 ? "header" : "timestamp";
    } else if (this.#step === "timestamp") {
      this.#step = "length";
    } else {
      this.#size = this.#skip = value;
      this.#stamped = 0;
      this.#step = "payload";
    }
  }

  // Header or payload bytes from `i`; returns where the next step starts.
  #body(chunk: Uint8Array, i: number): number {
    const take = Math.min(this.#skip, chunk.length - i);
    if (this.#step === "payload" && this.#stamped < 8) {
      const part = chunk.subarray(i, i + Math.min(take, 8 - this.#stamped));
      this.#stamp.set(part, this.#stamped);
      this.#stamped += part.length;
      if (this.#stamped === 8 || this.#stamped === this.#size) {
        this.#onFrame(new DataView(this.#stamp.buffer).getFloat64(0), this.#size);
      }
    }
    this.#skip -= take;
    if (this.#skip === 0) this.#step = "timestamp";
    return i + take;
  }
}
