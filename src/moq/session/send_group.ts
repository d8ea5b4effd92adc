/** One group's stream to a subscriber: the whole group at once, or frame by frame while it arrives. */
import type { StreamOptions } from "../../transport/mod.ts";
import type { CachedGroup, LiveFrames } from "../track/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { SessionCore } from "./core.ts";
import type { SessionSends } from "./session_sends.ts";

/**
 * Sends one group on its own uni stream. A complete group goes as one write
 * and the FIN. A group still arriving (cut-through) goes as its frames so
 * far, then each frame as it comes, and the FIN once its publisher finished
 * it; a group its publisher abandoned is reset here too, as is one
 * {@linkcode GroupSend.abort}ed (expired).
 */
export class GroupSend {
  /** The group being sent. */
  readonly group: CachedGroup;
  readonly #core: SessionCore;
  readonly #id: bigint;
  readonly #sent: (bytes: number) => void;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #setOrder: ((order: number) => void) | undefined;
  #order: number | undefined;
  #aborted = false;
  #wakeAbort: (() => void) | undefined;
  /**
   * The payload bytes its session and subscription count in flight for it
   * until the stream ends: the group's size when it starts, grown by each
   * frame taken for writing past that (a live group's), which the session
   * must have room for ({@linkcode SessionSends.mayTake}).
   */
  counted = 0;
  /**
   * Frames that arrived but are not taken yet, which only its subscription
   * counts ({@linkcode holdArrived}), until they are taken and move to
   * {@linkcode counted}.
   */
  arrived = 0;
  #taken = 0;
  #grew: ((session: number, subscription: number) => void) | undefined;

  /**
   * A send of `group` for subscription `id`; {@linkcode run} starts it.
   * `sent` is told the payload bytes of each write the stream took.
   */
  constructor(core: SessionCore, id: bigint, group: CachedGroup, sent: (bytes: number) => void) {
    this.#core = core;
    this.#id = id;
    this.group = group;
    this.#sent = sent;
  }

  /** Changes the stream's send order (at once, or once it is open). */
  reorder(order: number): void {
    this.#order = order;
    this.#setOrder?.(order);
  }

  /** Resets the stream (or never opens it); idempotent. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#core.stats.groupsReset++;
    this.#writer?.abort().catch(() => {});
    this.#wakeAbort?.();
  }

  /**
   * Sends the group; never rejects (a failed stream is logged and counted as
   * not sent). `release` runs once: when the stream ended, or earlier when
   * it has sent every frame so far and only waits for the next (a slot of
   * the subscription's streams in flight is not held by a group being written).
   * `grew` is told the bytes {@linkcode counted} grew by (frames of a live
   * group taken for writing past its size at the start), and those its
   * subscription's count grew by (less the frames {@linkcode arrived} had
   * counted already).
   */
  async run(
    order: StreamOptions,
    release: (send: GroupSend) => void,
    grew?: (session: number, subscription: number) => void,
  ): Promise<void> {
    this.#release = release;
    this.#grew = grew;
    const core = this.#core;
    // A complete group (most of them) is sent in this one frame, not through nested async
    // calls: each would cost every group a promise and a turn of the microtask queue.
    try {
      const stream = await core.transport.openUni(order);
      this.#setOrder = stream.setSendOrder;
      if (this.#order !== undefined) stream.setSendOrder?.(this.#order);
      const writer = this.#writer = stream.writable.getWriter();
      if (this.#aborted) writer.abort().catch(() => {});
      // A group that grew while its stream opened goes frame by frame: what it gained must fit
      // in the session's room.
      else if (this.group.complete && this.group.size <= this.counted) {
        const bytes = this.group.stream(core.version, this.#id);
        // One write and the FIN queued together; close settles after the write.
        writer.write(bytes).catch(() => {}); // reported through close
        await writer.close();
        core.stats.bytesSent += bytes.length;
        core.stats.groupsSent++;
        this.#sent(this.group.size);
      } else await this.#follow(writer);
    } catch (err) {
      if (!core.isClosed && !this.#aborted) {
        core.log("group-send", `group stream failed: ${errorText(err)}`);
      }
    } finally {
      this.#released();
      // An ended send holds no stream: one the young-generation collector had already moved
      // to the old generation would otherwise keep its stream's objects alive through every
      // young collection until the next full one.
      this.#writer =
        this.#setOrder =
        this.#wakeAbort =
        this.#grew =
          undefined;
    }
  }

  #release: ((send: GroupSend) => void) | undefined;

  #released(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.(this);
  }

  // Frames so far, then each as it arrives, until the group ends. Past the first write, only the
  // frames the session has room for are taken; the rest wait for room (see SessionSends).
  async #follow(writer: WritableStreamDefaultWriter<Uint8Array>): Promise<void> {
    const core = this.#core;
    const group = this.group;
    let sent = 0;
    let started = false;
    for (;;) {
      const live = group.live; // undefined once every frame is in
      if (live?.state === "reset") return this.abort();
      const to = this.#fitting(core.sends, sent, group.frames.length);
      // The stream's header goes first, with the frames that fit.
      const took = !started || to > sent;
      if (took) {
        const bytes = started
          ? group.encodedFrom(core.version, sent, to)
          : group.stream(core.version, this.#id, to);
        const payload = group.bytesOf(sent, to);
        started = true;
        sent = to;
        this.#take(payload);
        await writer.write(bytes);
        core.stats.bytesSent += bytes.length;
        this.#sent(payload);
      }
      if (this.#aborted) return;
      const waiting = group.frames.length > sent;
      if (!live && !waiting) break;
      // Waiting for the next frame, or for the session's room: no slot held either way.
      if (!waiting || !took) {
        this.#released();
        await this.#change(live, waiting ? core.sends.room() : undefined);
      }
      if (this.#aborted) return;
    }
    await writer.close();
    core.stats.groupsSent++;
  }

  // The end of the frames from `from` (below `count`) the session has room for now.
  #fitting(sends: SessionSends, from: number, count: number): number {
    const frames = this.group.frames;
    let payload = 0;
    let to = from;
    for (; to < count; to++) {
      const next = payload + (frames[to]?.length ?? 0);
      // Frames counted already (at the start) need no room.
      if (!sends.mayTake(this, this.#taken + next - this.counted)) break;
      payload = next;
    }
    return to;
  }

  /**
   * Counts, for its subscription only, the frames that arrived but are not
   * taken yet (behind a write the peer blocks, or waiting for the session's
   * room: the group holds them all the same); returns the bytes
   * {@linkcode arrived} grew by.
   */
  holdArrived(): number {
    const more = this.group.size - this.counted - this.arrived;
    if (more <= 0) return 0;
    this.arrived += more;
    return more;
  }

  // Frames taken for writing are held (by the group, then by the transport until the peer takes
  // them) while the stream is open, waiting for frames or not: counted before the write, which
  // a peer that stopped reading blocks. Bytes counted at the start are not counted twice, nor
  // are those its subscription counted as arrived.
  #take(payload: number): void {
    this.#taken += payload;
    const more = this.#taken - this.counted;
    if (more <= 0) return;
    this.counted = this.#taken;
    const moved = Math.min(this.arrived, more);
    this.arrived -= moved;
    this.#grew?.(more, more - moved);
  }

  // The next frame, end or reset of the group, `room` in the session, or this send's abort.
  #change(live: LiveFrames | undefined, room?: Promise<void>): Promise<void> {
    const aborted = new Promise<void>((resolve) => (this.#wakeAbort = resolve));
    const changes = [aborted];
    if (live) changes.push(live.changed());
    if (room) changes.push(room);
    return Promise.race(changes);
  }
}
