/** Sending a served subscription's groups, one uni stream each, a bounded number at once. */
import type { StreamOptions } from "../../transport/mod.ts";
import type { CachedGroup, TrackProducer } from "../track/mod.ts";
import type { SessionCore } from "./core.ts";
import type { DeliveryTurns } from "./delivery_turns.ts";
import { GroupSend } from "./send_group.ts";
import { RANKS, sendOrder } from "./send_order.ts";
import { type OpenStream, OpenStreams } from "./open_streams.ts";

/** How a served subscription's groups are ordered and expired (the subscriber's, else the track's). */
export interface Delivery {
  /** Subscriber priority 0..255: higher goes first across the session's subscriptions. */
  priority: number;
  /** Oldest group first when true, newest first otherwise. */
  ordered: boolean;
  /** A group older than this many ms, not the latest, is not started or is reset; 0: never. */
  maxLatency: number;
}

/** The track a subscription is served from: its newest group, and who is told what was sent. */
export type ServedTrack = Pick<TrackProducer, "latest" | "sent">;

/**
 * The group streams of one served subscription: at most `maxGroupsInFlight`
 * being sent, each started in a delivery turn when the session shares them,
 * in moq-lite's send order, and reset once they outlive the max latency.
 * A counter and one waiter instead of racing a set of promises for every
 * group.
 *
 * Within the subscription a stream's order is fixed when it opens, from its
 * rank: Deno's QUIC keeps the bytes a stream was given after we closed it and
 * lets nobody change its order then, so a newer group must outrank an older
 * one from the start instead of demoting it later.
 */
export class GroupStreams {
  readonly #core: SessionCore;
  readonly #id: bigint;
  readonly #max: number;
  readonly #turns: DeliveryTurns | undefined;
  readonly #track: ServedTrack;
  readonly #clock: () => number;
  /** The ordering and expiry of the subscription's streams ({@linkcode update} changes it). */
  readonly delivery: Delivery;
  #expiry: ReturnType<typeof setTimeout> | undefined;
  #inflight = 0;
  // Streams not ended yet (those waiting for frames hold no slot) with their place in the
  // subscription and whether they may expire, and who waits for none.
  readonly #open = new OpenStreams<GroupSend>();
  #drained: (() => void) | undefined;
  // The place of the next stream: each group sent frame by frame moves it on (see #start).
  #place = 0;
  #slotFree: (() => void) | undefined;

  /** Streams for subscription `id` of `track`. */
  constructor(
    core: SessionCore,
    id: bigint,
    delivery: Delivery,
    track: ServedTrack,
    clock: () => number = Date.now,
  ) {
    this.#core = core;
    this.#id = id;
    this.#max = Math.max(1, core.options.maxGroupsInFlight ?? 16);
    this.#turns = core.options.deliveryTurns;
    this.delivery = delivery;
    this.#track = track;
    this.#clock = clock;
  }

  /** True when `group` outlived the max latency and is not the track's latest. */
  expired(group: CachedGroup): boolean {
    const max = this.delivery.maxLatency;
    if (max <= 0 || this.#clock() - group.writtenAt <= max) return false;
    const latest = this.#track.latest;
    return latest !== undefined && group.sequence < latest;
  }

  // A stream stopped taking a slot: it ended, or waits for frames not written yet.
  readonly #freeSlot = (): void => {
    this.#inflight--;
    const free = this.#slotFree;
    this.#slotFree = undefined;
    free?.();
  };

  #sent(stream: OpenStream<GroupSend>): void {
    this.#open.remove(stream);
    if (this.#open.size === 0) this.#drained?.();
  }

  /**
   * Takes the subscriber's new priority, order and max latency (SUBSCRIBE_UPDATE):
   * for the streams started from now on and for those still open. A stream
   * already closed keeps its order (see the class comment), and Deno's QUIC
   * (quinn) moves a raised stream up only when it next schedules it, which for
   * one waiting behind higher orders is once they are done; a lowered one
   * moves at once.
   */
  update(delivery: Delivery): void {
    const reorder = delivery.priority !== this.delivery.priority ||
      delivery.ordered !== this.delivery.ordered;
    Object.assign(this.delivery, delivery);
    if (!reorder) return;
    for (const { send, place } of this.#open) send.reorder(this.#order(place));
  }

  /**
   * Starts a group's stream; a promise only when the caller must first wait
   * for a slot or a turn (most groups need neither: no promise, no await).
   */
  send(group: CachedGroup): Promise<void> | undefined {
    if (this.#inflight >= this.#max) return this.#sendAfterWaiting(group);
    const turn = this.#turns?.wait();
    if (turn) return this.#sendAfterWaiting(group, turn);
    this.#start(group);
    return undefined;
  }

  /** Resolves once every stream started is finished or failed. */
  async drained(): Promise<void> {
    while (this.#open.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
  }

  /** Stops the expiry timer (the subscription ended). */
  dispose(): void {
    if (this.#expiry !== undefined) clearTimeout(this.#expiry);
    this.#expiry = undefined;
  }

  // Waits for `turn` (already asked for), or else for a slot and then a turn.
  async #sendAfterWaiting(group: CachedGroup, turn?: Promise<void>): Promise<void> {
    if (turn) await turn;
    else {
      while (this.#inflight >= this.#max) await this.#slot();
      const next = this.#turns?.wait();
      if (next) await next;
    }
    // Only one loop sends, so a slot free before the turn is free after it.
    this.#start(group);
  }

  #slot(): Promise<void> {
    return new Promise<void>((resolve) => (this.#slotFree = resolve));
  }

  // A group sent frame by frame moves the place on, so the next group's stream outranks its
  // stream (newest first) or ranks below it (ordered), even after its last frame was handed to
  // the transport. Groups sent whole share the place, keeping their arrival order, as a burst is
  // best sent. The place starts again at 0 after RANKS groups sent frame by frame.
  #start(group: CachedGroup): void {
    this.#inflight++;
    const send = new GroupSend(this.#core, this.#id, group, (n) => this.#track.sent(group, n));
    const place = this.#place;
    if (!group.complete) this.#place = (place + 1) % RANKS;
    const stream = this.#open.add(send, place, this.delivery.maxLatency > 0);
    if (stream.expires) this.#armExpiry();
    const order = this.#order(place);
    void send.run(order === 0 ? NO_ORDER : { sendOrder: order }, this.#freeSlot)
      .then(() => this.#sent(stream));
  }

  #order(place: number): number {
    return sendOrder(this.delivery.priority, this.delivery.ordered ? -place : place);
  }

  // One timer per subscription, at the earliest time a stream being sent can expire.
  #armExpiry(): void {
    if (this.#expiry !== undefined) return;
    let earliest = Infinity;
    for (const { send, expires } of this.#open) {
      if (expires) earliest = Math.min(earliest, send.group.writtenAt);
    }
    if (earliest === Infinity) return;
    const wait = Math.max(10, earliest + this.delivery.maxLatency - this.#clock() + 1);
    this.#expiry = setTimeout(this.#expire, wait);
  }

  readonly #expire = (): void => {
    this.#expiry = undefined;
    for (const stream of this.#open) {
      if (!stream.expires || !this.expired(stream.send.group)) continue;
      this.#open.settle(stream);
      this.#core.stats.groupsExpired++;
      stream.send.abort();
    }
    // A stream too old but still the latest group is checked again later.
    if (this.#open.expiring > 0) {
      this.#expiry = setTimeout(this.#expire, Math.max(10, this.delivery.maxLatency / 4));
    }
  };
}

const NO_ORDER: StreamOptions = {};
