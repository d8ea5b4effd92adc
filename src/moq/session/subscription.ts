/** The consuming side's handle on one of the peer's tracks: groups in, updates out. */
import type { SubscribeUpdate, TrackInfo } from "../codec/messages.ts";
import { MoqError } from "../errors.ts";
import { BackpressureQueue as AsyncQueue } from "../../wire/mod.ts";
import type { ReceivedGroup } from "./types.ts";

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
  /** The publisher's track properties once known. */
  info: TrackInfo | undefined;
  /** Groups dropped because we did not keep up. */
  skipped = 0;
  /** @internal */
  readonly _queue: AsyncQueue<ReceivedGroup>;
  /** @internal */
  _inflight = 0;
  /** @internal */
  _publisherDone = false;
  /** @internal */
  _endGroup: number | undefined;
  /** @internal */
  _highest = -1;
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
  readonly #seen = new Set<number>();
  #resolveReady!: () => void;
  #rejectReady!: (err: unknown) => void;
  #accepted = false;
  #grace: ReturnType<typeof setTimeout> | undefined;

  /** @internal */
  constructor(path: string, track: string, id: bigint, limit: number) {
    this.path = path;
    this.track = track;
    this.id = id;
    this.#limit = limit;
    this._queue = new AsyncQueue<ReceivedGroup>(Infinity, () => this.close());
    this.ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Callers that never await ready must not see an unhandled rejection; iterating reports the error.
    this.ready.catch(() => {});
  }

  /** @internal */
  _accept(): void {
    if (this.#accepted) return;
    this.#accepted = true;
    this.#resolveReady();
  }

  /** @internal Hands over a complete group; drops the oldest queued when behind. */
  _deliver(group: ReceivedGroup): boolean {
    if (this._queue.ended || this.#seen.has(group.sequence)) return false;
    if (this._current.end !== undefined && group.sequence > this._current.end) return false;
    this.#seen.add(group.sequence);
    if (this.#seen.size > 4096) {
      for (const s of this.#seen) if (s < group.sequence - 2048) this.#seen.delete(s);
    }
    if (group.sequence > this._highest) this._highest = group.sequence;
    while (this._queue.size >= this.#limit) {
      this._queue.shift();
      this.skipped++;
    }
    this._queue.push(group);
    return true;
  }

  /** @internal Ends iteration (cleanly, or with an error). */
  _end(error?: unknown): void {
    if (this.#grace !== undefined) clearTimeout(this.#grace);
    this.#grace = undefined;
    if (!this.#accepted) {
      this.#rejectReady(error ?? new MoqError("closed", "Subscription ended before it started"));
    }
    this._queue.end(error);
    this._onClose();
    this._onClose = () => {};
  }

  /** @internal Publisher finished: end once in-flight groups are in (with a short grace). */
  _maybeFinish(graceMs: number): void {
    if (!this._publisherDone || this._queue.ended) return;
    // Group streams may still be on their way when the Subscribe stream ends:
    // without a known end, wait a short grace period for stragglers.
    const complete = this._endGroup !== undefined && this._highest >= this._endGroup - 1;
    if (this._inflight === 0 && complete) {
      this._end();
      return;
    }
    if (this.#grace === undefined) {
      this.#grace = setTimeout(() => {
        this.#grace = undefined;
        this._end();
      }, graceMs);
    }
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
