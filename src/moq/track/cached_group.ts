import { encodeFrames, encodeGroupStreamHeader, type Version } from "../codec/mod.ts";
import { LiveFrames } from "./live_frames.ts";
import { FRAME_COST } from "./receive_budget.ts";

/**
 * A group's frames, a function that makes them the first time they are read,
 * or the frames of a group still arriving ({@linkcode LiveFrames}).
 */
export type GroupFrames =
  | Uint8Array
  | readonly Uint8Array[]
  | (() => Uint8Array | readonly Uint8Array[])
  | LiveFrames;

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
  // Set while the group may still be growing; dropped once it is done.
  #live: LiveFrames | undefined;
  #v04: Uint8Array<ArrayBuffer> | undefined;
  #v05: Uint8Array<ArrayBuffer> | undefined;
  #size = -1;
  // The size given for frames made on first read, counted against a cache budget meanwhile.
  readonly #estimate: number | undefined;
  #stream: { version: Version; id: bigint; bytes: Uint8Array<ArrayBuffer> } | undefined;

  /**
   * Makes a group; frames given as a function are made on first read. A
   * group that did not come through a producer's writes (one fetched from
   * elsewhere) has index -1. `estimate` is the payload size of frames given
   * as a function, so a byte budget can count them without making them.
   */
  constructor(
    sequence: number,
    frames: GroupFrames,
    timestamp: number | bigint,
    index: number,
    writtenAt = 0,
    estimate?: number,
  ) {
    this.sequence = sequence;
    this.#estimate = estimate;
    this.#frames = frames;
    if (frames instanceof LiveFrames) this.#live = frames;
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
    this.#live = frames instanceof LiveFrames ? frames : undefined;
    this.#v04 = this.#v05 = this.#stream = undefined;
    this.#size = -1;
  }

  /**
   * The frames still arriving, while the group is open or was reset;
   * undefined for a complete group.
   */
  get live(): LiveFrames | undefined {
    const live = this.#live;
    if (live?.state === "done") {
      this.#live = undefined;
      return undefined;
    }
    return live;
  }

  /** True once every frame is in (always, for a group written whole). */
  get complete(): boolean {
    return this.live === undefined;
  }

  /** The frames (so far, while the group is still arriving). */
  get frames(): readonly Uint8Array[] {
    let frames = this.#frames;
    if (frames instanceof LiveFrames) return frames.frames;
    if (typeof frames === "function") frames = frames();
    if (frames instanceof Uint8Array) frames = [frames];
    this.#frames = frames;
    return frames;
  }

  /** Payload bytes of frames `from` up to `to` (exclusive; default: the frames so far). */
  bytesOf(from: number, to: number = this.frames.length): number {
    const frames = this.frames;
    let n = 0;
    for (let i = from; i < to; i++) n += frames[i]?.length ?? 0;
    return n;
  }

  /** Total payload bytes. */
  get size(): number {
    const live = this.live;
    if (live) return live.bytes;
    if (this.#size < 0) {
      let n = 0;
      for (const f of this.frames) n += f.length;
      this.#size = n;
    }
    return this.#size;
  }

  /**
   * The bytes a cache budget counts: the estimate given for frames not made
   * yet, else {@linkcode size} and `FRAME_COST` for each frame past the
   * first (what holding a frame costs whatever its size: a group of a
   * million one-byte frames holds about 128 MB, not 1 MB).
   */
  get cost(): number {
    if (typeof this.#frames === "function" && this.#estimate !== undefined) return this.#estimate;
    return this.size + Math.max(0, this.frames.length - 1) * FRAME_COST;
  }

  /**
   * The whole group stream (GROUP header for `subscribeId`, then the frames)
   * in `version`. The last one made is kept: subscribers of a relay or a
   * listener mostly use the same id, so every one of them sends the same bytes.
   */
  stream(version: Version, subscribeId: bigint): Uint8Array<ArrayBuffer> {
    if (this.live) {
      return this.#concat(
        encodeGroupStreamHeader({ subscribeId, sequence: this.sequence }),
        this.encoded(version),
      );
    }
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

  /**
   * The frame bytes as they follow a GROUP header (or answer a FETCH) in
   * `version`: of the frames so far while the group is still arriving.
   */
  encoded(version: Version): Uint8Array<ArrayBuffer> {
    if (this.live) return this.encodedFrom(version, 0);
    if (version === "moq-lite-05") {
      return this.#v05 ??= encodeFrames(this.frames, version, this.exactTimestamp, this.#stamps());
    }
    return this.#v04 ??= encodeFrames(this.frames, version);
  }

  /**
   * Frames `from` to the latest, as they continue a group stream whose
   * earlier frames were sent (lite-05 timestamp deltas run on from frame
   * `from - 1`).
   */
  encodedFrom(version: Version, from: number): Uint8Array<ArrayBuffer> {
    const frames = this.frames.slice(from);
    if (version !== "moq-lite-05") return encodeFrames(frames, version);
    const stamps = this.#stamps()?.slice(from);
    const previous = from === 0 ? 0n : this.#stamps()?.[from - 1] ?? this.exactTimestamp;
    return encodeFrames(frames, version, this.exactTimestamp, stamps, previous);
  }

  // Per-frame timestamps, for a group that arrived frame by frame.
  #stamps(): readonly bigint[] | undefined {
    return this.#frames instanceof LiveFrames ? this.#frames.timestamps : undefined;
  }

  #concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
    const bytes = new Uint8Array(a.length + b.length);
    bytes.set(a);
    bytes.set(b, a.length);
    return bytes;
  }
}
