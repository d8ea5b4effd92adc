/**
 * The frames of a group still being received: a relay forwards each frame as
 * it arrives (cut-through) instead of waiting for the whole group.
 */

/** Where a group being received stands. */
export type LiveState = "open" | "done" | "reset";

/**
 * A group's frames as they arrive, and whether the group ended (its stream
 * finished) or was abandoned (reset by its publisher, or expired). Readers
 * take the frames from an index on and wait for more with {@linkcode changed}.
 *
 * @example
 * ```ts
 * const live = new LiveFrames(0n);
 * live.push(new Uint8Array([1]));
 * live.finish();
 * ```
 */
export class LiveFrames {
  /** The frames so far, in order (the array grows; never replaced). */
  readonly frames: Uint8Array[] = [];
  /** Each frame's timestamp in the track timescale (lite-05), parallel to `frames`. */
  readonly timestamps: bigint[] = [];
  /** The first frame's timestamp: the group's. */
  readonly timestamp: bigint;
  #bytes = 0;
  #state: LiveState = "open";
  #changed: Promise<void> | undefined;
  #notify: (() => void) | undefined;

  /** An open group whose first frame is stamped `timestamp`. */
  constructor(timestamp: bigint) {
    this.timestamp = timestamp;
  }

  /** "open" while frames may still come, then "done" or "reset". */
  get state(): LiveState {
    return this.#state;
  }

  /** Payload bytes so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Appends a frame (ignored once the group ended). */
  push(frame: Uint8Array, timestamp: bigint = this.timestamp): void {
    if (this.#state !== "open") return;
    this.frames.push(frame);
    this.timestamps.push(timestamp);
    this.#bytes += frame.length;
    this.#wake();
  }

  /** The publisher finished the group: every frame is in. */
  finish(): void {
    if (this.#state !== "open") return;
    this.#state = "done";
    this.#wake();
  }

  /** The group was abandoned: readers reset their streams of it. */
  reset(): void {
    if (this.#state !== "open") return;
    this.#state = "reset";
    this.#wake();
  }

  /** Resolves at the next frame, finish or reset (at once when the group already ended). */
  changed(): Promise<void> {
    if (this.#state !== "open") return Promise.resolve();
    return this.#changed ??= new Promise((resolve) => (this.#notify = resolve));
  }

  #wake(): void {
    const notify = this.#notify;
    this.#changed = this.#notify = undefined;
    notify?.();
  }
}
