import { encodeFrames, encodeGroupStreamHeader, type Version } from "../codec/mod.ts";

/** A group's frames, or a function that makes them the first time they are read. */
export type GroupFrames =
  | Uint8Array
  | readonly Uint8Array[]
  | (() => Uint8Array | readonly Uint8Array[]);

/** One group held by a producer; its frame bytes are encoded once per version. */
export class CachedGroup {
  /** Absolute group sequence. */
  readonly sequence: number;
  /** Timestamp in the track timescale, as a number (approximate above 2^53). */
  readonly timestamp: number;
  /** The same timestamp, exact (nanoseconds since the epoch exceed 2^53). */
  readonly exactTimestamp: bigint;
  /** Position in the producer's write (arrival) order. */
  readonly index: number;
  /** When the producer took the group, ms on its clock. */
  readonly writtenAt: number;
  #frames: GroupFrames;
  #v04: Uint8Array<ArrayBuffer> | undefined;
  #v05: Uint8Array<ArrayBuffer> | undefined;
  #size = -1;
  #stream: { version: Version; id: bigint; bytes: Uint8Array<ArrayBuffer> } | undefined;

  /**
   * Makes a group; frames given as a function are made on first read. A
   * group that did not come through a producer's writes (one fetched from
   * elsewhere) has index -1.
   */
  constructor(
    sequence: number,
    frames: GroupFrames,
    timestamp: number | bigint,
    index: number,
    writtenAt = 0,
  ) {
    this.sequence = sequence;
    this.#frames = frames;
    this.exactTimestamp = BigInt(timestamp);
    this.timestamp = Number(timestamp);
    this.index = index;
    this.writtenAt = writtenAt;
  }

  /**
   * Replaces the frames (a redaction removed the payload), dropping every
   * encoding made of the old ones, so nothing serves them again.
   */
  replaceFrames(frames: GroupFrames): void {
    this.#frames = frames;
    this.#v04 = this.#v05 = this.#stream = undefined;
    this.#size = -1;
  }

  /** The frames. */
  get frames(): readonly Uint8Array[] {
    let frames = this.#frames;
    if (typeof frames === "function") frames = frames();
    if (frames instanceof Uint8Array) frames = [frames];
    this.#frames = frames;
    return frames;
  }

  /** Total payload bytes. */
  get size(): number {
    if (this.#size < 0) {
      let n = 0;
      for (const f of this.frames) n += f.length;
      this.#size = n;
    }
    return this.#size;
  }

  /**
   * The whole group stream (GROUP header for `subscribeId`, then the frames)
   * in `version`. The last one made is kept: subscribers of a relay or a
   * listener mostly use the same id, so every one of them sends the same bytes.
   */
  stream(version: Version, subscribeId: bigint): Uint8Array<ArrayBuffer> {
    const kept = this.#stream;
    if (kept && kept.id === subscribeId && kept.version === version) return kept.bytes;
    const header = encodeGroupStreamHeader({ subscribeId, sequence: this.sequence });
    const body = this.encoded(version);
    const bytes = new Uint8Array(header.length + body.length);
    bytes.set(header);
    bytes.set(body, header.length);
    this.#stream = { version, id: subscribeId, bytes };
    return bytes;
  }

  /** The frame bytes as they follow a GROUP header (or answer a FETCH) in `version`. */
  encoded(version: Version): Uint8Array<ArrayBuffer> {
    if (version === "moq-lite-05") {
      return this.#v05 ??= encodeFrames(this.frames, version, this.exactTimestamp);
    }
    return this.#v04 ??= encodeFrames(this.frames, version);
  }
}
