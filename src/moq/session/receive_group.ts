/** The consuming side's group streams: frames read within the session's size budgets. */
import { checkTimestamp, decodeGroupHeader, MAX_CONTROL_MESSAGE } from "../codec/mod.ts";
import { DecodeError, type StreamReader, zigzagDecode } from "../../wire/mod.ts";
import {
  type BudgetHolder,
  DEFAULT_MAX_FRAME,
  DEFAULT_MAX_GROUP,
  FRAME_COST,
  LiveFrames,
} from "../track/mod.ts";
import type { SessionCore } from "./core.ts";
import type { ReceivedGroup } from "./types.ts";
import { afterTurn } from "../../timers/mod.ts";

// Resolves (to undefined) once the current event-loop turn is over.
function turnOver(): Promise<undefined> {
  return new Promise((resolve) => afterTurn(() => resolve(undefined)));
}

/**
 * Reads one group stream (after its type) into the subscription it belongs
 * to: whole, or (a `partial` subscription) handed over at its first frame and
 * followed frame by frame, reset when the stream fails.
 */
export async function receiveGroup(core: SessionCore, r: StreamReader): Promise<void> {
  const header = decodeGroupHeader(await r.message("GROUP", MAX_CONTROL_MESSAGE));
  const sub = core.subs.get(header.subscribeId);
  if (!sub) {
    if (header.subscribeId >= core.nextSubscribeId) {
      core.stats.protocolErrors++;
      core.log("group-id", `group for unknown subscription ${header.subscribeId}`);
    }
    return;
  }
  sub._receiving(1);
  const reading = new GroupReading(core, header.sequence, {
    partial: sub.partial,
    deliver: (group) => core.deliver(sub, group),
  });
  try {
    await reading.run(r);
  } catch (err) {
    if (reading.live) {
      reading.live.reset();
      sub._abandoned(header.sequence);
    }
    throw err;
  } finally {
    core.budget.release(reading);
    sub._receiving(-1);
    sub._maybeFinish(250);
  }
}

/** Where a group being read goes (a subscription, or the requester of a FETCH). */
export interface GroupTarget {
  /** Hand the group over at its first frame (cut-through), not at its end. */
  readonly partial: boolean;
  /** Takes the group: complete, or (`partial`) at its first frame with `live` to follow. */
  deliver(group: ReceivedGroup): void;
}

/**
 * One group stream (or FETCH answer) being read: its frames, within the
 * budgets, and where they go. The caller releases what it `held` from the
 * session's budget once the stream ended, and resets `live` if it failed.
 */
export class GroupReading implements BudgetHolder {
  readonly #core: SessionCore;
  readonly #target: GroupTarget;
  readonly #sequence: number;
  readonly #maxFrame: number;
  readonly #maxGroup: number;
  /** The group handed over before its end (`partial` targets). */
  live: LiveFrames | undefined;
  /** Payload bytes taken from the session's budget so far (the budget keeps it). */
  held = 0;
  #reader: StreamReader | undefined;

  /** Reads group `sequence` for `target`; {@linkcode run} reads it. */
  constructor(core: SessionCore, sequence: number, target: GroupTarget) {
    this.#core = core;
    this.#target = target;
    this.#sequence = sequence;
    this.#maxFrame = core.options.maxFrameSize ?? DEFAULT_MAX_FRAME;
    this.#maxGroup = core.options.maxGroupSize ?? DEFAULT_MAX_GROUP;
  }

  /** Bytes its stream delivered so far (the budget's stall check). */
  progress(): number {
    return this.#reader?.received ?? 0;
  }

  /** Resets its stream (the budget found it holding bytes and sending none). */
  reset(): void {
    this.#reader?.cancel();
  }

  /** Reads the frames to the stream's end; the group is delivered at its end or its hand-over. */
  async run(r: StreamReader): Promise<void> {
    this.#reader = r;
    const core = this.#core;
    const frames: Uint8Array[] = [];
    const stamps: bigint[] = [];
    let ts = 0n;
    let first: bigint | undefined;
    // The end-of-stream check still pending from a hand-over decision.
    let pending: Promise<boolean> | undefined;
    // Set once the event-loop turn of the first frame is over.
    let turnPassed = false;
    for (;;) {
      const done = pending ?? r.done();
      pending = undefined;
      if (await done) break;
      if (core.version === "moq-lite-05") {
        ts = checkTimestamp(ts + zigzagDecode(await r.u62("timestamp delta")));
        first ??= ts;
      }
      const frame = await r.bytes(await this.#admit(await r.u53("frame size")), "frame");
      if (this.live) {
        this.live.push(frame, ts);
        continue;
      }
      frames.push(frame);
      stamps.push(ts);
      if (!this.#target.partial) continue;
      // A group whose end comes within the turn of its first frame still goes whole (one-frame
      // groups mostly do), else it goes on and frames follow: at once when nothing more is here,
      // and at the next frame once that turn is over. A stream that always has more bytes
      // waiting (a congested link delivers a group as fast as it can) would otherwise keep
      // its group until its end.
      if (frames.length === 1) afterTurn(() => (turnPassed = true));
      if (!turnPassed) {
        if (r.buffered > 0) continue;
        pending = r.done();
        if (await Promise.race([pending, turnOver()]) !== undefined) continue;
      }
      this.#handOver(frames, stamps);
    }
    if (this.live) return this.live.finish();
    this.#deliver(frames, first ?? 0n);
  }

  // Checks a frame's size against the frame and group limits, and waits for room for it in
  // the session's budget (shared by every group being received).
  // A frame counts FRAME_COST besides its payload, which is what holding it costs.
  async #admit(size: number): Promise<number> {
    const cost = size + FRAME_COST;
    if (size > this.#maxFrame || this.held + cost > this.#maxGroup) {
      throw new DecodeError("too_large", `Cannot read frame of ${size} bytes: over the limit`);
    }
    await this.#core.budget.take(cost, this);
    return size;
  }

  // A partial subscription's group, its frames so far: the group goes on at once.
  #handOver(frames: Uint8Array[], stamps: bigint[]): void {
    const timestamp = stamps[0] ?? 0n;
    const live = this.live = new LiveFrames(timestamp);
    frames.forEach((frame, i) => live.push(frame, stamps[i]));
    this.#target.deliver({
      sequence: this.#sequence,
      frames: live.frames,
      timestamp: Number(timestamp),
      exactTimestamp: timestamp,
      live,
    });
  }

  #deliver(frames: Uint8Array[], timestamp: bigint): void {
    this.#target.deliver({
      sequence: this.#sequence,
      frames,
      timestamp: Number(timestamp),
      exactTimestamp: timestamp,
    });
  }
}
