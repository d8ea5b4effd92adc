/** One group's stream to a subscriber: the whole group at once, or frame by frame while it arrives. */
import type { SendStream, StreamOptions } from "../../transport/mod.ts";
import { type CachedGroup, FRAME_COST, type LiveFrames } from "../track/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { SessionCore } from "./core.ts";
import type { OpenStream } from "./open_streams.ts";

/** Who is told the payload bytes each write of a group's stream took (the served track). */
export interface SentTo {
  /** `bytes` payload bytes of `group` went to the transport. */
  sent(group: CachedGroup, bytes: number): void;
}

// One callback for the rejections reported elsewhere, not a new one for every stream.
const ignore = (): void => {};

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
  readonly #track: SentTo;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #stream: SendStream | undefined;
  #order: number | undefined;
  #aborted = false;
  #wakeAbort: (() => void) | undefined;
  /**
   * The payload bytes its subscription counts in flight for it until the
   * stream ends: the group's size when it starts, grown by each frame taken
   * for writing past that (a live group's), and by {@linkcode holdArrived}.
   */
  counted = 0;
  /** Its place in the subscription's open streams, while it is there (set by its owner). */
  entry: OpenStream<GroupSend> | undefined;
  #taken = 0;
  #grew: ((bytes: number) => void) | undefined;

  /**
   * A send of `group` for subscription `id`; {@linkcode run} starts it.
   * `track` is told the payload bytes of each write the stream took.
   */
  constructor(core: SessionCore, id: bigint, group: CachedGroup, track: SentTo) {
    this.#core = core;
    this.#id = id;
    this.group = group;
    this.#track = track;
  }

  #sent(bytes: number): void {
    this.#track.sent(this.group, bytes);
  }

  /** Changes the stream's send order (at once, or once it is open). */
  reorder(order: number): void {
    this.#order = order;
    this.#stream?.setSendOrder?.(order);
  }

  /** Resets the stream (or never opens it); idempotent. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#core.stats.groupsReset++;
    this.#writer?.abort().catch(ignore);
    this.#wakeAbort?.();
  }

  /**
   * Sends the group; never rejects (a failed stream is logged and counted as
   * not sent). `release` runs once: when the stream ended, or earlier when
   * it has sent every frame so far and only waits for the next (a slot of
   * the subscription's streams in flight is not held by a group being written).
   * `grew` is told the bytes {@linkcode counted} grew by (frames of a live
   * group taken for writing past its size at the start), and `ended` that
   * the stream ended, once, after `release`.
   */
  async run(
    order: StreamOptions,
    release: (send: GroupSend) => void,
    grew?: (bytes: number) => void,
    ended?: (send: GroupSend) => void,
  ): Promise<void> {
    this.#release = release;
    this.#grew = grew;
    const core = this.#core;
    // The group's bytes count in the session's sends from its start, which waited for room
    // (GroupStreams), not only once its stream opened: every start checked meanwhile sees them.
    this.#reserved = this.group.size + this.group.frames.length * FRAME_COST;
    core.sends.took(this.#reserved);
    // A complete group (most of them) is sent in this one frame, not through nested async
    // calls: each would cost every group a promise and a turn of the microtask queue.
    try {
      const stream = await core.transport.openUni(order);
      this.#stream = stream;
      if (this.#order !== undefined) stream.setSendOrder?.(this.#order);
      const writer = this.#writer = stream.writable.getWriter();
      if (this.#aborted) writer.abort().catch(ignore);
      else if (this.group.complete) {
        const bytes = this.group.stream(core.version, this.#id);
        // The session counts the write until the transport took it (SessionSends); its start
        // waited for room (GroupStreams).
        const sends = core.sends;
        const held = this.group.size + this.group.frames.length * FRAME_COST;
        const given = (): void => sends.gave(held);
        sends.took(held);
        this.#unreserve();
        // One write and the FIN queued together; close settles after the write, whose failure
        // it reports.
        writer.write(bytes).then(given, given);
        await writer.close();
        core.stats.bytesSent += bytes.length;
        core.stats.groupsSent++;
        this.#sent(this.group.size);
      } else {
        core.sends.opened(this);
        try {
          await this.#follow(writer);
        } finally {
          core.sends.closed(this);
        }
      }
    } catch (err) {
      if (!core.isClosed && !this.#aborted) {
        core.log("group-send", `group stream failed: ${errorText(err)}`);
      }
    } finally {
      this.#unreserve();
      this.#released();
      // An ended send holds no stream: one the young-generation collector had already moved
      // to the old generation would otherwise keep its stream's objects alive through every
      // young collection until the next full one.
      this.#writer =
        this.#stream =
        this.#wakeAbort =
        this.#grew =
          undefined;
      // Told here rather than through a `.then` on this call: a promise and a callback less
      // for every group sent to every subscriber.
      ended?.(this);
    }
  }

  #release: ((send: GroupSend) => void) | undefined;
  // What the session counts for the stream from its start until its first write counts instead.
  #reserved = 0;

  #unreserve(): void {
    const reserved = this.#reserved;
    if (reserved === 0) return;
    this.#reserved = 0;
    this.#core.sends.gave(reserved);
  }

  #released(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.(this);
  }

  // Frames so far, then each as it arrives, until the group ends.
  async #follow(writer: WritableStreamDefaultWriter<Uint8Array>): Promise<void> {
    const core = this.#core;
    const group = this.group;
    let sent = 0;
    for (;;) {
      const live = group.live; // undefined once every frame is in
      if (live?.state === "reset") return this.abort();
      const count = group.frames.length;
      if (sent === 0 || count > sent) {
        const payload = group.bytesOf(sent, count);
        // What the transport has not taken yet counts in the session's sends until it does
        // (SessionSends): past the bound, the frames wait here, in the group, for room (the
        // session's oldest such stream goes on); the first write (and so the stream's start)
        // waited for it in GroupStreams.
        const held = payload + (count - sent) * FRAME_COST;
        if (sent > 0 && !core.sends.mayWrite(this, held)) {
          this.#released();
          await this.#change(live, core.sends.room());
          if (this.#aborted) return;
          continue;
        }
        const bytes = sent === 0
          ? group.stream(core.version, this.#id)
          : group.encodedFrom(core.version, sent);
        sent = count;
        this.#take(payload);
        core.sends.took(held);
        this.#unreserve();
        try {
          await writer.write(bytes);
        } finally {
          core.sends.gave(held);
        }
        core.stats.bytesSent += bytes.length;
        this.#sent(payload);
      }
      if (this.#aborted) return;
      if (!live) break;
      if (group.frames.length === sent) {
        this.#released();
        await this.#change(live);
      }
      if (this.#aborted) return;
    }
    await writer.close();
    core.stats.groupsSent++;
  }

  /**
   * Counts the frames that arrived but are not taken yet (behind a write the
   * peer blocks: the group holds them all the same); returns the bytes
   * {@linkcode counted} grew by.
   */
  holdArrived(): number {
    const more = this.group.size - this.counted;
    if (more <= 0) return 0;
    this.counted += more;
    return more;
  }

  // Frames taken for writing are held (by the group, then by the transport until the peer takes
  // them) while the stream is open, waiting for frames or not: counted before the write, which
  // a peer that stopped reading blocks. Bytes counted at the start are not counted twice.
  #take(payload: number): void {
    this.#taken += payload;
    const more = this.#taken - this.counted;
    if (more <= 0) return;
    this.counted = this.#taken;
    this.#grew?.(more);
  }

  // The next frame, end or reset of the group, `room` in the session's sends, or this send's abort.
  #change(live: LiveFrames | undefined, room?: Promise<void>): Promise<void> {
    const aborted = new Promise<void>((resolve) => (this.#wakeAbort = resolve));
    const changes = [aborted];
    if (live) changes.push(live.changed());
    if (room) changes.push(room);
    return Promise.race(changes);
  }
}
