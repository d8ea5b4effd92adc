/** The consuming side's handle on one of the peer's tracks: groups in, updates out. */
import type { SubscribeUpdate, TrackInfo } from "../codec/mod.ts";
import { MoqError } from "../errors.ts";
import { BackpressureQueue as AsyncQueue } from "../../wire/mod.ts";
import { SequenceWindow } from "../sequence_window.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { ReceivedGroup } from "./types.ts";

/**
 * How long a finished subscription waits for groups still missing below its
 * end, ms: each group has its own stream, so one that was lost and sent
 * again can land well after the publisher said it was done.
 */
export const LATE_GROUP_WAIT_MS = 2000;

/** A subscription to one of the peer's tracks: iterate it for groups. */
export class Subscription implements AsyncIterable<ReceivedGroup> {
  /** Canonical broadcast path. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Our subscribe id. */
  readonly id: bigint;
  /** Resolves once the publisher accepted (lite-04 SUBSCRIBE_OK, lite-05 TRACK_INFO); rejects with a MoqError. */
  readonly ready: Promise<void>;
  /**
   * Resolves once the publisher answered the SUBSCRIBE itself (lite-04
   * SUBSCRIBE_OK; lite-05 SUBSCRIBE_START, END or DROP) or delivered a
   * group: on lite-05, {@linkcode ready} only means the track exists
   * (TRACK_INFO). Rejects like `ready` when the subscription ends first.
   */
  readonly answered: Promise<void>;
  /** The publisher's track properties once known. */
  info: TrackInfo | undefined;
  /** Groups dropped because we did not keep up. */
  skipped = 0;
  /** Groups are delivered at their first frame (see `SubscribeOptions.partial`). */
  partial = false;
  /** @internal */
  readonly _queue: AsyncQueue<ReceivedGroup>;
  /** @internal */
  _publisherDone = false;
  /** @internal Exclusive end: the first group that will never be delivered. */
  _endGroup: number | undefined;
  /** @internal First group the publisher said it delivers (lite-05 SUBSCRIBE_START). */
  _startGroup: number | undefined;
  /** @internal */
  _onClose: () => void = () => {};
  /** @internal */
  _sendUpdate: ((update: SubscribeUpdate) => Promise<void>) | undefined;
  /** @internal */
  _current: SubscribeUpdate = {
    priority: 0,
    ordered: false,
    maxLatency: 0,
    start: undefined,
    end: undefined,
  };
  readonly #limit: number;
  readonly #seen = new SequenceWindow();
  readonly #dropped: Array<readonly [number, number]> = [];
  #lowest = Infinity;
  #receiving = 0;
  #finishBy: number | undefined;
  #resolveReady!: () => void;
  #rejectReady!: (err: unknown) => void;
  #accepted = false;
  #resolveAnswered!: () => void;
  #rejectAnswered!: (err: unknown) => void;
  #answered = false;
  #grace: unknown;
  readonly #timers: Timers;

  /** @internal */
  constructor(
    path: string,
    track: string,
    id: bigint,
    limit: number,
    timers: Timers = systemTimers,
  ) {
    this.#timers = timers;
    this.path = path;
    this.track = track;
    this.id = id;
    this.#limit = limit;
    this._queue = new AsyncQueue<ReceivedGroup>(Infinity, () => this.close());
    this.ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.answered = new Promise<void>((resolve, reject) => {
      this.#resolveAnswered = resolve;
      this.#rejectAnswered = reject;
    });
    // Callers that never await ready must not see an unhandled rejection; iterating reports the error.
    this.ready.catch(() => {});
    this.answered.catch(() => {});
  }

  /** @internal */
  _accept(): void {
    if (this.#accepted) return;
    this.#accepted = true;
    this.#resolveReady();
  }

  /** @internal The publisher answered the SUBSCRIBE (or sent a group). */
  _answer(): void {
    if (this.#answered) return;
    this.#answered = true;
    this.#resolveAnswered();
  }

  /** Ranges (inclusive) the publisher said it will never deliver (SUBSCRIBE_DROP; the latest 64). */
  get drops(): ReadonlyArray<readonly [number, number]> {
    return this.#dropped;
  }

  /** The first group the publisher said it delivers (lite-05 SUBSCRIBE_START), once known. */
  get startGroup(): number | undefined {
    return this._startGroup;
  }

  /** Groups being received right now (their streams are open). */
  get receiving(): number {
    return this.#receiving;
  }

  /** @internal A group stream of this subscription started (+1) or ended (-1). */
  _receiving(delta: 1 | -1): void {
    this.#receiving += delta;
  }

  /** @internal The publisher will never deliver `start..end` (inclusive; SUBSCRIBE_DROP). */
  _drop(start: number, end: number): void {
    if (this.#dropped.length >= 64) this.#dropped.shift();
    this.#dropped.push([start, end]);
  }

  /**
   * @internal Hands over a complete group, whatever its arrival order; each
   * sequence once. Drops the oldest queued when behind.
   */
  _deliver(group: ReceivedGroup): boolean {
    if (this._queue.ended) return false;
    if (this._current.end !== undefined && group.sequence > this._current.end) return false;
    if (!this.#seen.add(group.sequence)) return false;
    this._answer();
    if (group.sequence < this.#lowest) this.#lowest = group.sequence;
    while (this._queue.size >= this.#limit) {
      this._queue.shift();
      this.skipped++;
    }
    this._queue.push(group);
    return true;
  }

  /**
   * @internal A group handed over at its first frame was reset: the same
   * sequence is taken again if another copy comes (a new upstream's).
   */
  _abandoned(sequence: number): void {
    this.#seen.forget(sequence);
  }

  /** @internal Ends iteration (cleanly, or with an error). */
  _end(error?: unknown): void {
    if (this.#grace !== undefined) this.#timers.clearTimeout(this.#grace);
    this.#grace = undefined;
    if (!this.#accepted) {
      this.#rejectReady(error ?? new MoqError("closed", "Subscription ended before it started"));
    }
    if (!this.#answered) {
      this.#answered = true;
      this.#rejectAnswered(error ?? new MoqError("closed", "Subscription ended unanswered"));
    }
    this._queue.end(error);
    this._onClose();
    this._onClose = () => {};
  }

  /**
   * @internal Publisher finished: end once every group below its end is in.
   * With a known end, groups still missing (late on a lossy link) get up to
   * {@linkcode LATE_GROUP_WAIT_MS}; without one, stragglers get `graceMs`.
   */
  _maybeFinish(graceMs: number, now: number = Date.now()): void {
    if (!this._publisherDone || this._queue.ended) return;
    if (this.#receiving === 0 && this.#complete()) {
      this._end();
      return;
    }
    if (this.#grace !== undefined) return;
    const wait = this._endGroup === undefined ? graceMs : LATE_GROUP_WAIT_MS;
    this.#finishBy ??= now + wait;
    this.#grace = this.#timers.setTimeout(() => {
      this.#grace = undefined;
      this._end();
    }, Math.max(0, this.#finishBy - now));
  }

  // Every sequence from the first delivered (or announced) up to the end is in or dropped.
  #complete(): boolean {
    const end = this._endGroup;
    if (end === undefined) return false;
    // Where the range begins: as the publisher said, else as we asked, else the first group in.
    const begin = this._startGroup ?? this._current.start ??
      (this.#lowest === Infinity ? undefined : this.#lowest);
    if (begin === undefined) return end === 0;
    const first = Math.max(begin, end - 4096, this.#seen.floor);
    for (let s = first; s < end; s++) {
      if (this.#seen.check(s) === "new" && !this.#dropped.some(([a, b]) => s >= a && s <= b)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Changes priority or range (SUBSCRIBE_UPDATE). Rejects if the subscription
   * is not open yet or already ended.
   */
  async update(options: { priority?: number; start?: number; end?: number }): Promise<void> {
    if (!this._sendUpdate || this._queue.ended) {
      throw new MoqError("closed", "Cannot update a subscription that is not open");
    }
    const next: SubscribeUpdate = {
      ...this._current,
      ...(options.priority !== undefined ? { priority: options.priority } : {}),
      ...("start" in options ? { start: options.start } : {}),
      ...("end" in options ? { end: options.end } : {}),
    };
    if (next.end !== undefined) this._endGroup = next.end + 1;
    await this._sendUpdate(next);
    this._current = next;
  }

  /** Stops the subscription (idempotent); iteration ends. */
  close(): void {
    this._end();
  }

  /** Iterates groups in arrival order until the publisher finishes, we close, or the session ends. */
  [Symbol.asyncIterator](): AsyncIterator<ReceivedGroup> {
    return this._queue[Symbol.asyncIterator]();
  }
}
