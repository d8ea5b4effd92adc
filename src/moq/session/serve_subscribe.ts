/** The serving side of SUBSCRIBE: feeds one of our tracks to the peer, group by group. */
import { DecodeError, type StreamReader } from "../../wire/mod.ts";
import {
  decodeSubscribe,
  decodeSubscribeUpdate,
  encodeSubscribeResponse,
  MAX_CONTROL_MESSAGE,
  type Subscribe,
  type SubscribeUpdate,
} from "../codec/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import type { Sender } from "../sender.ts";
import {
  type CachedGroup,
  type LiveFrames,
  type TrackCursor,
  TrackProducer,
} from "../track/mod.ts";
import type { SessionCore } from "./core.ts";
import { DeliveryGaps } from "./delivery_gaps.ts";
import { LATE_GROUP_WAIT_MS } from "./subscription.ts";
import { decide, refuse } from "./serve_request.ts";
import { type Delivery, GroupStreams } from "./group_streams.ts";
import { DATAGRAM_TAIL_MS, datagramsWanted, sendDatagram } from "./send_datagram.ts";
import { LoopWake } from "./loop_wake.ts";

/**
 * Serves a SUBSCRIBE: one group stream per group (or, on a datagram track,
 * one datagram per single-frame group that fits), range updates read from
 * the same stream.
 */
export async function serveSubscribe(
  core: SessionCore,
  r: StreamReader,
  w: Sender,
): Promise<void> {
  const m = decodeSubscribe(await r.message("SUBSCRIBE", MAX_CONTROL_MESSAGE));
  const path = normalizePath(m.path);
  const decision = await decide(core, "subscribe", path, m.track, m.start);
  if (!(decision instanceof TrackProducer)) {
    refuse(core, w, decision);
    return;
  }
  core.stats.subscriptionsOpened++;
  const served = new ServedSubscription(core, w, m, decision, datagramsWanted(core, path, m.track));
  const reading = readUpdates(core, r, served);
  try {
    await served.run();
  } finally {
    served.close();
    await w.close();
    r.cancel();
    await reading;
  }
}

// Updates arrive on the subscription's stream; the peer's FIN (or reset, or a
// malformed update) cancels the subscription.
async function readUpdates(
  core: SessionCore,
  r: StreamReader,
  served: ServedSubscription,
): Promise<void> {
  try {
    while (!(await r.done())) {
      const u = decodeSubscribeUpdate(await r.message("SUBSCRIBE_UPDATE", MAX_CONTROL_MESSAGE));
      served.update(u);
    }
  } catch (err) {
    if (err instanceof DecodeError) core.streamFailed("subscribe", err);
  }
  served.stop();
}

/** One served subscription: its cursor on our track, its range and how its groups go out. */
class ServedSubscription {
  readonly #core: SessionCore;
  readonly #w: Sender;
  readonly #id: bigint;
  readonly #start: number | undefined;
  readonly #producer: TrackProducer;
  readonly #cursor: TrackCursor;
  readonly #v05: boolean;
  readonly #datagrams: boolean;
  // Set by stop(): a flag and a wake rather than an AbortController, whose signal and listener
  // list each idle subscription would hold.
  #halted = false;
  readonly #wake: LoopWake;
  readonly #gaps: DeliveryGaps;
  readonly #streams: GroupStreams;
  #end: number | undefined;
  // The newest group sent as a datagram, repeated on a stream if nothing newer follows in time.
  #tail: CachedGroup | undefined;
  #tailAt = 0;
  #skipped = 0;
  #started = false;

  constructor(
    core: SessionCore,
    w: Sender,
    m: Subscribe,
    producer: TrackProducer,
    datagrams: boolean,
  ) {
    this.#core = core;
    this.#wake = new LoopWake(core.timers);
    this.#w = w;
    this.#id = m.id;
    this.#start = m.start;
    this.#end = m.end;
    this.#producer = producer;
    this.#v05 = core.version === "moq-lite-05";
    this.#datagrams = datagrams;
    core.abort.signal.addEventListener("abort", this.stop, { once: true });
    this.#cursor = producer.cursor(m.start, core.options.maxGroupQueue ?? 16);
    this.#gaps = new DeliveryGaps(core.options.lateGroupWaitMs ?? LATE_GROUP_WAIT_MS);
    this.#streams = new GroupStreams(core, m.id, delivery(m, producer), producer);
  }

  /** Ends the serving loop (the peer is done, or the session ended). */
  readonly stop = (): void => {
    if (this.#halted) return;
    this.#halted = true;
    this.#wake.wake();
  };

  /** Takes the subscriber's new range and priority. */
  update(u: SubscribeUpdate): void {
    this.#end = u.end;
    this.#streams.update(delivery({ ...u, start: this.#start }, this.#producer));
    this.#wake.wake();
  }

  /** Serves until the end of the range, the end of the track, or {@linkcode stop}. */
  run(): Promise<void> {
    // Chained, not an async function awaiting #loop: an idle subscription, waiting in #loop for
    // its whole life, then holds that one suspended function rather than two.
    const looped = this.#v05 ? this.#loop() : this.#writeOk().then(() => this.#loop());
    return looped.then((finished) => this.#finish(finished));
  }

  async #finish(finished: boolean): Promise<void> {
    if (this.#tail && !this.#halted) await this.#repeatTail();
    // Stopped (the subscriber left, or the session ended): its streams are reset now, not
    // drained, since a live group a stalled publisher never finishes, or a write the subscriber
    // never reads, would hold the subscription, its cursor and a relay's upstream track.
    if (this.#halted) this.#streams.abort();
    await this.#streams.drained();
    if (finished && this.#v05) await this.#writeEnd();
  }

  /** Releases the cursor, the timer and the session listener. */
  close(): void {
    this.#halted = true;
    this.#wake.dispose();
    this.#streams.dispose();
    this.#cursor.close();
    this.#core.abort.signal.removeEventListener("abort", this.stop);
    this.#core.stats.subscriptionsClosed++;
  }

  // True when everything was sent (the range or the track is done), false when stopped.
  async #loop(): Promise<boolean> {
    const cursor = this.#cursor;
    const gaps = this.#gaps;
    for (;;) {
      // Done once everything up to the end was sent, or waited for and dropped.
      if (this.#end !== undefined && gaps.highest >= this.#end && gaps.settledThrough(this.#end)) {
        return true;
      }
      // Gaps past their wait become drops; the end may be settled now.
      if (gaps.open > 0) {
        const expired = gaps.expired();
        if (expired.length > 0) {
          await this.#writeDrops(expired);
          continue;
        }
      }
      // Nothing is awaited between this poll and the wait in #idle, so no write is missed.
      const group = cursor.poll();
      this.#core.stats.groupsSkipped += cursor.skipped - this.#skipped;
      this.#skipped = cursor.skipped;
      if (!group) {
        // Awaited here rather than inside an async #idle: one suspended function less for each
        // idle subscription.
        const idle = this.#idle();
        if (typeof idle === "boolean") return idle;
        await idle;
        continue; // woken by a write, an update, the end or a deadline
      }
      if (this.#end !== undefined && group.sequence > this.#end) {
        // Past the end: what is still missing below it gets the bounded wait.
        gaps.expect(this.#end, this.#start);
        continue;
      }
      if (!this.#started) {
        if (this.#v05) await this.#writeStart(group.sequence);
        this.#started = true;
      }
      if (!this.#sendable(group)) continue;
      gaps.sent(group.sequence);
      if (this.#datagrams && await this.#sendDatagram(group)) continue;
      // A newer group on a stream shows the subscriber any datagram lost before it.
      if (this.#tail && group.sequence > this.#tail.sequence) this.#tail = undefined;
      if (this.#halted) return false;
      const live = group.live;
      // Only where a stream can be reset (WebSocket's QMux): Deno's QUIC, and our WebTransport
      // over it, finish a stream they abort, so the subscriber took the partial group as whole
      // (docs/relay.md, "Deno's QUIC cannot reset a stream") and a second copy is a duplicate.
      if (live && this.#cursor.flowControlled && this.#core.transport.transport === "websocket") {
        void this.#watch(group.sequence, live);
      }
      const waited = this.#streams.send(group);
      if (waited) await waited;
    }
  }

  // A group of a flow-controlled track abandoned (reset) mid-way did not reach the subscriber
  // whole: the cursor delivers it again should it be written again (see TrackCursor.abandoned).
  // Media tracks are not watched: a group their publisher abandoned is simply gone.
  async #watch(sequence: number, live: LiveFrames): Promise<void> {
    while (live.state === "open") await live.changed();
    if (live.state !== "reset" || this.#halted) return;
    this.#cursor.abandoned(sequence);
    this.#wake.wake();
  }

  // A group abandoned by its publisher, or past the max latency, is not started (and
  // counts as skipped: on lite-05 its gap becomes a drop after the usual wait).
  #sendable(group: CachedGroup): boolean {
    const expired = this.#streams.expired(group);
    if (!expired && group.live?.state !== "reset") return true;
    if (!expired) this.#cursor.abandoned(group.sequence);
    if (expired) this.#core.stats.groupsExpired++;
    this.#core.stats.groupsSkipped++;
    return false;
  }

  // Nothing to send now: finished (true), stopped (false), or what to await before polling
  // again (the tail's repeat, or a wake).
  #idle(): boolean | Promise<void> {
    if (this.#halted) return false;
    if (this.#tail && Date.now() >= this.#tailAt) return this.#repeatTail();
    if (this.#producer.closed) return true;
    const gapDeadline = this.#gaps.nextDeadline();
    if (gapDeadline !== undefined) this.#wake.wakeAt(gapDeadline);
    if (this.#tail) this.#wake.wakeAt(this.#tailAt);
    return this.#wake.wait(this.#cursor);
  }

  // Sends the group as a datagram if it can go as one, and remembers it as the tail.
  async #sendDatagram(group: CachedGroup): Promise<boolean> {
    if (!(await sendDatagram(this.#core, this.#id, group))) return false;
    this.#producer.sent(group, group.size);
    if (!this.#tail || group.sequence > this.#tail.sequence) {
      this.#tail = group;
      this.#tailAt = Date.now() + DATAGRAM_TAIL_MS;
    }
    return true;
  }

  async #repeatTail(): Promise<void> {
    const group = this.#tail!;
    this.#tail = undefined;
    this.#core.stats.datagramTailRepeats++;
    await this.#streams.send(group);
  }

  // Groups we will not send (skipped, never produced, or missing past the wait): tell the subscriber.
  async #writeDrops(ranges: ReadonlyArray<readonly [number, number]>): Promise<void> {
    if (!this.#v05) return;
    for (const [start, end] of ranges) {
      await this.#w.write(
        encodeSubscribeResponse({ kind: "drop", start, end, code: 0 }, this.#core.version),
      );
    }
  }

  // lite-04 answers at once, with where the subscription starts.
  async #writeOk(): Promise<void> {
    const info = this.#producer.info;
    const latest = this.#producer.latest;
    await this.#w.write(encodeSubscribeResponse({
      kind: "ok",
      priority: info.priority,
      ordered: info.ordered,
      maxLatency: info.maxLatency,
      start: latest === undefined ? undefined : Math.max(latest, this.#start ?? latest),
      end: undefined,
    }, this.#core.version));
  }

  // lite-05 names the first group before sending it.
  async #writeStart(sequence: number): Promise<void> {
    await this.#w.write(
      encodeSubscribeResponse({ kind: "start", group: sequence }, this.#core.version),
    );
  }

  // lite-05 ends with the drops still open and the group after the last.
  async #writeEnd(): Promise<void> {
    await this.#writeDrops(this.#gaps.expired(true));
    await this.#w.write(
      encodeSubscribeResponse({ kind: "end", group: this.#gaps.highest + 1 }, this.#core.version),
    );
  }
}

/**
 * A subscription's ordering and expiry: the subscriber's own, else the
 * track's. The track's max latency applies only to a live subscription (no
 * start group): one that asked for older groups wants them, however old.
 */
function delivery(
  m: Pick<Subscribe, "priority" | "ordered" | "maxLatency" | "start">,
  producer: TrackProducer,
): Delivery {
  const info = producer.info;
  const trackLatency = m.start === undefined ? info.maxLatency : 0;
  return {
    priority: m.priority,
    ordered: m.ordered || info.ordered,
    maxLatency: m.maxLatency > 0 ? m.maxLatency : trackLatency,
  };
}
