import { encodeFrames, type TrackInfo, type Version } from "./codec/messages.ts";

/** Options for {@linkcode TrackProducer}. */
export interface TrackProducerOptions {
  /** How many recent groups to keep for new subscribers and FETCH (default 32). */
  readonly cache?: number;
  /** Publisher priority 0..255 (default 0). */
  readonly priority?: number;
  /** Whether groups should be delivered in order (default false). */
  readonly ordered?: boolean;
  /** Retention of non-latest groups in ms, advertised in TRACK_INFO (default 5000). */
  readonly maxLatency?: number;
  /** Timestamp units per second (default 1000). */
  readonly timescale?: number;
  /** Clock for default group timestamps, in ms (default Date.now). */
  readonly clock?: () => number;
}

/** Options for {@linkcode TrackProducer.writeGroup}. */
export interface WriteGroupOptions {
  /** The group's timestamp in the track timescale (default: clock converted to the timescale). */
  readonly timestamp?: number;
}

/** A group's frames, or a function that makes them the first time they are read. */
export type GroupFrames =
  | Uint8Array
  | readonly Uint8Array[]
  | (() => Uint8Array | readonly Uint8Array[]);

/** One group held by a producer; its frame bytes are encoded once per version. */
export class CachedGroup {
  /** Absolute group sequence. */
  readonly sequence: number;
  /** Timestamp in the track timescale. */
  readonly timestamp: number;
  /** Position in the producer's write order. */
  readonly index: number;
  #frames: GroupFrames;
  #v04: Uint8Array<ArrayBuffer> | undefined;
  #v05: Uint8Array<ArrayBuffer> | undefined;

  /** Makes a group; frames given as a function are made on first read. */
  constructor(sequence: number, frames: GroupFrames, timestamp: number, index: number) {
    this.sequence = sequence;
    this.#frames = frames;
    this.timestamp = timestamp;
    this.index = index;
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
    let n = 0;
    for (const f of this.frames) n += f.length;
    return n;
  }

  /** The frame bytes as they follow a GROUP header (or answer a FETCH) in `version`. */
  encoded(version: Version): Uint8Array<ArrayBuffer> {
    if (version === "moq-lite-05") {
      return this.#v05 ??= encodeFrames(this.frames, version, this.timestamp);
    }
    return this.#v04 ??= encodeFrames(this.frames, version);
  }
}

/**
 * The source of one track: the application writes groups with explicit
 * sequences, and every session serving the track reads them through its own
 * cursor. Writing never waits for subscribers; slow ones skip ahead.
 *
 * @example
 * ```ts
 * const track = new TrackProducer();
 * track.writeGroup(1, new TextEncoder().encode("hello"));
 * ```
 */
export class TrackProducer {
  /** The properties advertised to subscribers (TRACK_INFO / SUBSCRIBE_OK). */
  readonly info: TrackInfo;
  readonly #cacheSize: number;
  readonly #clock: () => number;
  readonly #ring: CachedGroup[] = [];
  #written = 0;
  #latest: CachedGroup | undefined;
  #closed = false;
  // Armed only while someone waits, so a write nobody awaits allocates nothing.
  #changed: Promise<void> | undefined;
  #notify: (() => void) | undefined;
  #cursors = 0;
  readonly #waiters = new Set<() => void>();
  #stale = 0;

  /** Makes an empty, open track. */
  constructor(options: TrackProducerOptions = {}) {
    this.info = {
      priority: options.priority ?? 0,
      ordered: options.ordered ?? false,
      maxLatency: options.maxLatency ?? 5000,
      timescale: options.timescale ?? 1000,
    };
    if (
      !Number.isInteger(this.info.priority) || this.info.priority < 0 || this.info.priority > 255
    ) {
      throw new RangeError(`Cannot use priority "${this.info.priority}": outside 0..255`);
    }
    if (!(this.info.timescale > 0)) {
      throw new RangeError(`Cannot use timescale "${this.info.timescale}": must be positive`);
    }
    this.#cacheSize = Math.max(1, options.cache ?? 32);
    this.#clock = options.clock ?? Date.now;
  }

  #signal(): void {
    const notify = this.#notify;
    this.#changed = undefined;
    this.#notify = undefined;
    notify?.();
    if (this.#waiters.size === 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  /** @internal Resolves at the next write or close, or when `signal` aborts (no leftover listeners). */
  _waitChange(signal?: AbortSignal): Promise<void> {
    if (!signal) return this._changed;
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const done = (): void => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Sequence of the latest group, or undefined before the first. */
  get latest(): number | undefined {
    return this.#latest?.sequence;
  }

  /** True after {@linkcode close}. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Number of live subscriber cursors (sessions currently serving this track). */
  get subscribers(): number {
    return this.#cursors;
  }

  /** Writes refused because their sequence was not above the latest. */
  get staleWrites(): number {
    return this.#stale;
  }

  /**
   * Appends a group. Sequences must increase; a sequence at or below the
   * latest is refused (returns false) so late duplicates never reach
   * subscribers twice. Frames given as a function are made when a
   * subscriber first reads the group, so groups nobody reads cost no encoding.
   */
  writeGroup(
    sequence: number,
    frames: GroupFrames,
    options: WriteGroupOptions = {},
  ): boolean {
    if (this.#closed) throw new TypeError("Cannot write a group: the track is closed");
    if (!Number.isSafeInteger(sequence) || sequence < 0) {
      throw new RangeError(`Cannot write group "${sequence}": not a non-negative safe integer`);
    }
    if (this.#latest && sequence <= this.#latest.sequence) {
      this.#stale++;
      return false;
    }
    const timestamp = options.timestamp ??
      Math.max(0, Math.round(this.#clock() * this.info.timescale / 1000));
    const group = new CachedGroup(sequence, frames, timestamp, this.#written++);
    this.#ring.push(group);
    if (this.#ring.length > this.#cacheSize) this.#ring.shift();
    this.#latest = group;
    this.#signal();
    return true;
  }

  /** A cached group by sequence (for FETCH), if still held. */
  group(sequence: number): CachedGroup | undefined {
    return this.#ring.find((g) => g.sequence === sequence);
  }

  /** Ends the track: subscribers finish after what they already have. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signal();
  }

  /**
   * A reader positioned at `start` if that group is cached, else at the
   * latest group (or the first group to come). Internal to sessions.
   */
  cursor(start?: number, queueLimit = 16): TrackCursor {
    let index = this.#latest ? this.#latest.index : this.#written;
    if (start !== undefined) {
      const cached = this.#ring.find((g) => g.sequence >= start);
      if (cached) index = cached.index;
      else if (this.#latest && start > this.#latest.sequence) index = this.#written;
    }
    this.#cursors++;
    return new TrackCursor(this, index, Math.max(1, queueLimit), () => this.#cursors--);
  }

  /** @internal */
  _at(index: number): CachedGroup | undefined {
    const first = this.#ring[0];
    if (!first) return undefined;
    return this.#ring[index - first.index];
  }

  /** @internal */
  get _written(): number {
    return this.#written;
  }

  /** @internal */
  get _oldestIndex(): number {
    return this.#ring[0]?.index ?? this.#written;
  }

  /** @internal */
  get _changed(): Promise<void> {
    return this.#changed ??= new Promise((resolve) => {
      this.#notify = resolve;
    });
  }
}

/** One subscriber's position in a {@linkcode TrackProducer}. */
export class TrackCursor {
  readonly #track: TrackProducer;
  readonly #limit: number;
  #index: number;
  #skipped = 0;
  #release: (() => void) | undefined;

  /** @internal */
  constructor(track: TrackProducer, index: number, limit: number, release: () => void) {
    this.#track = track;
    this.#index = index;
    this.#limit = limit;
    this.#release = release;
  }

  /** Groups skipped because this reader fell behind. */
  get skipped(): number {
    return this.#skipped;
  }

  /** The next group without waiting, or undefined if none is ready. */
  poll(): CachedGroup | undefined {
    const written = this.#track._written;
    if (this.#index >= written) return undefined;
    const oldest = this.#track._oldestIndex;
    // Behind by more than the queue allows (or past the cache): jump to the latest.
    if (written - this.#index > this.#limit || this.#index < oldest) {
      const target = written - 1;
      this.#skipped += target - this.#index;
      this.#index = target;
    }
    const group = this.#track._at(this.#index);
    this.#index++;
    return group;
  }

  /** Waits for the next group; undefined when the track closed (or `signal` aborted). */
  async next(signal?: AbortSignal): Promise<CachedGroup | undefined> {
    for (;;) {
      const group = this.poll();
      if (group) return group;
      if (this.#track.closed || signal?.aborted) return undefined;
      await this.#track._waitChange(signal);
    }
  }

  /** Releases the cursor (idempotent). */
  close(): void {
    this.#release?.();
    this.#release = undefined;
  }
}
