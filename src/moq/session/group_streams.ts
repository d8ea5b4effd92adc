/** Sending a served subscription's groups, one uni stream each, a bounded number at once. */
import type { StreamOptions } from "../../transport/mod.ts";
import type { CachedGroup, TrackProducer } from "../track/mod.ts";
import type { OrderedStreams, SessionCore } from "./core.ts";
import type { DeliveryTurns } from "./delivery_turns.ts";
import { GroupSend } from "./send_group.ts";
import { rankOf, RANKS, rebase, sendOrder } from "./send_order.ts";
import { type OpenStream, OpenStreams } from "./open_streams.ts";

/** Payload bytes a served subscription's open group streams hold by default (either dialect). */
export const DEFAULT_BYTES_IN_FLIGHT = 8 << 20;

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
 * being sent, at most {@linkcode OPEN_PER_SLOT} times that open (a live group
 * waiting for frames holds no slot, but stays open), holding at most
 * `maxBytesInFlight` of payload while open, a live group's frames counted as
 * they are written or, behind a blocked write, as they arrive (a group
 * starts while none is open, however large), each
 * started in a delivery turn when the session shares them, in moq-lite's send
 * order, and reset once they outlive the max latency.
 * A counter and one waiter instead of racing a set of promises for every
 * group.
 *
 * Within the subscription a stream's order is fixed when it opens, from its
 * rank: Deno's QUIC keeps the bytes a stream was given after we closed it and
 * lets nobody change its order then, so a newer group must outrank an older
 * one from the start instead of demoting it later.
 *
 * A rank is a place counted from a base, and places never wrap: once the next
 * place would pass the last rank, the base moves up to the oldest stream
 * still open and the open streams are reordered, so a session that has sent
 * millions of groups keeps its order (see {@linkcode rebase}).
 */
export class GroupStreams implements OrderedStreams {
  readonly #core: SessionCore;
  readonly #id: bigint;
  readonly #max: number;
  readonly #maxOpen: number;
  readonly #maxBytes: number;
  readonly #turns: DeliveryTurns | undefined;
  readonly #track: ServedTrack;
  readonly #clock: () => number;
  /** The ordering and expiry of the subscription's streams ({@linkcode update} changes it). */
  readonly delivery: Delivery;
  #expiry: unknown;
  #inflight = 0;
  // The payload counted by the streams not ended yet, waiting for frames or not.
  #openBytes = 0;
  // Streams not ended yet (those waiting for frames hold no slot) with their place in the
  // subscription and whether they may expire, and who waits for none.
  readonly #open = new OpenStreams<GroupSend>();
  #drained: (() => void) | undefined;
  // The place of the next stream: each group sent frame by frame moves it on (see #start), and
  // the place newest-first ranks count from.
  #place: number;
  #base = 0;
  #slotFree: (() => void) | undefined;
  // The last #full was the session's bound: the wait ends with a stream of any subscription.
  #heldBySession = false;

  /**
   * Streams for subscription `id` of `track`; the first newest-first stream
   * takes place `firstPlace` (tests start it near the last rank).
   */
  constructor(
    core: SessionCore,
    id: bigint,
    delivery: Delivery,
    track: ServedTrack,
    clock: () => number = Date.now,
    firstPlace = 0,
  ) {
    this.#place = firstPlace;
    this.#core = core;
    this.#id = id;
    this.#max = Math.max(1, core.options.maxGroupsInFlight ?? 16);
    this.#maxOpen = this.#max * OPEN_PER_SLOT;
    this.#maxBytes = core.options.maxBytesInFlight ?? DEFAULT_BYTES_IN_FLIGHT;
    this.#turns = core.options.deliveryTurns;
    this.delivery = delivery;
    this.#track = track;
    this.#clock = clock;
  }

  /** True when `group` outlived the max latency and is not the track's latest. */
  expired(group: CachedGroup): boolean {
    const max = this.delivery.maxLatency;
    if (max <= 0) return false;
    // The latest first: a subscriber keeping up sends the latest, and reads no clock for it.
    const latest = this.#track.latest;
    if (latest === undefined || group.sequence >= latest) return false;
    return this.#clock() - group.writtenAt > max;
  }

  // A stream stopped taking a slot: it ended, or waits for frames not written yet (its bytes
  // stay counted until it ends).
  readonly #freeSlot = (): void => {
    this.#inflight--;
    this.#wake();
  };

  // A live group's stream took more frames for writing.
  readonly #grew = (bytes: number): void => {
    this.#openBytes += bytes;
  };

  #wake(): void {
    const free = this.#slotFree;
    this.#slotFree = undefined;
    free?.();
  }

  #sent(stream: OpenStream<GroupSend>): void {
    this.#open.remove(stream);
    this.#openBytes -= stream.send.counted;
    if (this.#open.size === 0) this.#core.orderedOpen.delete(this);
    this.#wake();
    // No stream left to expire: the timer goes now, not at its deadline (an idle subscription
    // holds no timer).
    if (this.#open.expiring === 0) this.dispose();
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
    if (reorder) this.reorderOpen();
  }

  /** The place of the oldest stream still open, if any. */
  get oldestPlace(): number | undefined {
    for (const { place } of this.#open) return place;
    return undefined;
  }

  /** Gives the open streams their orders again (the delivery changed, or the base moved). */
  reorderOpen(): void {
    for (const { send, place } of this.#open) send.reorder(this.#order(place));
  }

  /**
   * Starts a group's stream; a promise only when the caller must first wait
   * for a slot or a turn (most groups need neither: no promise, no await).
   */
  send(group: CachedGroup): Promise<void> | undefined {
    if (this.#full(group)) return this.#sendAfterWaiting(group);
    const turn = this.#turns?.wait();
    if (turn) {
      // Under overload most groups wait for a turn: a callback made once, not an async call.
      this.#afterTurn = group;
      return turn.then(this.#startAfterTurn);
    }
    this.#start(group);
    return undefined;
  }

  // The group waiting for its turn (one at most: only one loop sends).
  #afterTurn: CachedGroup | undefined;

  readonly #startAfterTurn = (): void => {
    const group = this.#afterTurn!;
    this.#afterTurn = undefined;
    this.#start(group);
  };

  /** Resolves once every stream started is finished or failed. */
  async drained(): Promise<void> {
    while (this.#open.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
  }

  /** Resets every stream not ended yet (the subscription was cancelled). */
  abort(): void {
    for (const stream of this.#open) {
      this.#open.settle(stream);
      stream.send.abort();
    }
  }

  /** Stops the expiry timer (the subscription ended). */
  dispose(): void {
    if (this.#expiry !== undefined) this.#core.expiryTimers.clearTimeout(this.#expiry);
    this.#expiry = undefined;
  }

  // Waits for a slot and then a turn.
  async #sendAfterWaiting(group: CachedGroup): Promise<void> {
    while (this.#full(group)) await this.#slot();
    const next = this.#turns?.wait();
    if (next) await next;
    // Only one loop sends, so a slot free before the turn is free after it.
    this.#start(group);
  }

  // No room for `group`: as many streams in flight or open as allowed, or its bytes would pass
  // the bound (a group always starts while no stream is open, however large).
  #full(group: CachedGroup): boolean {
    const open = this.#open.size;
    this.#heldBySession = false;
    if (this.#inflight >= this.#max || open >= this.#maxOpen) return true;
    // The session's subscriptions share a bound on what their transport has not taken yet
    // (SessionSends), checked while none of its streams could end to wake this one: a write of
    // any subscription of the session the transport takes does.
    this.#heldBySession = this.#core.sends.full(group.size);
    if (this.#heldBySession) return true;
    if (open === 0) return false;
    const size = group.size;
    if (this.#openBytes + size > this.#maxBytes) return true;
    // Frames a live group's send has not taken yet (its write blocked) are held too: counted
    // now, only when the group would otherwise start (a few open streams to look at, 64 at most).
    let more = 0;
    for (const stream of this.#open) more += stream.send.holdArrived();
    this.#openBytes += more;
    return this.#openBytes + size > this.#maxBytes;
  }

  // A stream of this subscription ended, or (when the session's bound held it) one of another.
  #slot(): Promise<void> {
    const own = new Promise<void>((resolve) => (this.#slotFree = resolve));
    return this.#heldBySession ? Promise.race([own, this.#core.sends.room()]) : own;
  }

  // A group sent frame by frame moves the place on, so the next group's stream outranks its
  // stream (newest first) or ranks below it (ordered), even after its last frame was handed to
  // the transport. Newest first, groups sent whole share the place (a burst of one-frame groups
  // goes out as it came). Ordered, every group moves it on: quinn shares the link round-robin
  // between streams of one order, so a backlog of large groups sent whole went out side by
  // side, each finished only once nearly all were, and a subscriber aging a group from its
  // first byte (`@moq/net` drops one older than the max latency) lost them. Ordered places are
  // counted across the session's ordered subscriptions, so their groups go oldest first across
  // all of them: one catching up on a backlog does not outrank one that has sent more. Places
  // count on past RANKS; the ranks they are sent at move their base up before the last one.
  #start(group: CachedGroup): void {
    this.#inflight++;
    const send = new GroupSend(this.#core, this.#id, group, this.#track);
    send.counted = group.size;
    this.#openBytes += send.counted;
    const core = this.#core;
    let place: number;
    if (this.delivery.ordered) {
      if (core.orderedPlace - core.orderedBase >= RANKS) this.#rebaseOrdered();
      place = core.orderedPlace++;
      core.orderedOpen.add(this);
    } else {
      if (this.#place - this.#base >= RANKS) {
        this.#base = rebase(this.#place, this.oldestPlace);
        this.reorderOpen();
      }
      place = this.#place;
      if (!group.complete) this.#place++;
    }
    const stream = this.#open.add(send, place, this.delivery.maxLatency > 0);
    send.entry = stream;
    if (stream.expires) this.#armExpiry();
    const order = this.#order(place);
    void send.run(
      order === 0 ? NO_ORDER : { sendOrder: order },
      this.#freeSlot,
      this.#grew,
      this.#ended,
    );
  }

  readonly #ended = (send: GroupSend): void => {
    const stream = send.entry;
    send.entry = undefined;
    if (stream) this.#sent(stream);
  };

  #order(place: number): number {
    const ordered = this.delivery.ordered;
    const rank = rankOf(place, ordered ? this.#core.orderedBase : this.#base);
    return sendOrder(this.delivery.priority, ordered ? -rank : rank);
  }

  // Ordered places are the session's: the base moves to the oldest stream open in any of its
  // ordered subscriptions, and all of them are reordered (once per RANKS / 2 streams at most).
  #rebaseOrdered(): void {
    const core = this.#core;
    let oldest: number | undefined;
    for (const streams of core.orderedOpen) {
      const place = streams.oldestPlace;
      if (place !== undefined && (oldest === undefined || place < oldest)) oldest = place;
    }
    core.orderedBase = rebase(core.orderedPlace, oldest);
    for (const streams of core.orderedOpen) streams.reorderOpen();
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
    this.#expiry = this.#core.expiryTimers.setTimeout(this.#expire, wait);
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
      this.#expiry = this.#core.expiryTimers.setTimeout(
        this.#expire,
        Math.max(10, this.delivery.maxLatency / 4),
      );
    }
  };
}

const NO_ORDER: StreamOptions = {};

/**
 * Open streams allowed per slot in flight. A live group waiting for its next
 * frame gives its slot back by design: a subscriber caught up with a track
 * whose groups overlap (a long live group while the next begins) would
 * otherwise be held a whole group behind. But each open stream is a QUIC
 * stream, its state and its group's frames held until it ends, so the open
 * ones are bounded too: 4 x 16 = 64 at the defaults, room for overlapping
 * live groups, while a subscriber that never takes its streams holds at most
 * that many (and `maxBytesInFlight` of their payload).
 */
export const OPEN_PER_SLOT = 4;
