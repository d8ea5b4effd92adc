/** The serving side of SUBSCRIBE: feeds one of our tracks to the peer, group by group. */
import type { BidiStream, StreamOptions } from "../../transport/mod.ts";
import { DecodeError, type StreamReader } from "../../wire/mod.ts";
import {
  decodeSubscribe,
  decodeSubscribeUpdate,
  encodeDatagram,
  encodeSubscribeResponse,
  MAX_CONTROL_MESSAGE,
} from "../codec/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import type { Sender } from "../sender.ts";
import { type CachedGroup, TrackProducer } from "../track/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { SessionCore } from "./core.ts";
import { DeliveryGaps } from "./delivery_gaps.ts";
import { LATE_GROUP_WAIT_MS } from "./subscription.ts";
import { decide, refuse } from "./serve_request.ts";

/**
 * Largest datagram body sent, bytes: the lite-05 draft's cap, which every
 * QUIC path carries (its minimum MTU leaves 1200 bytes of payload).
 */
export const MAX_DATAGRAM_BODY = 1200;

/**
 * How long the newest group sent as a datagram waits for a newer one
 * before it is sent again on a stream, ms. A lost datagram shows as a gap
 * once a newer group arrives; the last of a burst has none after it, so
 * without the repeat its loss would go unnoticed until the track moves on.
 */
export const DATAGRAM_TAIL_MS = 100;

/**
 * Serves a SUBSCRIBE: one group stream per group (or, on a datagram track,
 * one datagram per single-frame group that fits), range updates read from
 * the same stream.
 */
export async function serveSubscribe(
  core: SessionCore,
  r: StreamReader,
  w: Sender,
  stream: BidiStream,
): Promise<void> {
  const m = decodeSubscribe(await r.message("SUBSCRIBE", MAX_CONTROL_MESSAGE));
  const path = normalizePath(m.path);
  const decision = await decide(core, "subscribe", path, m.track, m.start);
  if (!(decision instanceof TrackProducer)) {
    refuse(core, w, decision);
    return;
  }
  const producer = decision;
  core.stats.subscriptionsOpened++;
  const v05 = core.version === "moq-lite-05";
  // The draft forbids datagrams on QMux over WebSocket; there they would cross TCP anyway.
  const datagrams = v05 && core.transport.transport !== "websocket" &&
    core.transport.sendDatagram !== undefined &&
    (core.options.datagrams?.(path, m.track, core.session) ?? false);
  const stop = new AbortController();
  // The loop waits on one promise at a time; a write, a close, an update,
  // the end of the session or a deadline resolves it. One callback shared
  // by every wait, so waiting allocates nothing but the promise. A wake
  // while the loop is busy elsewhere (writing, waiting for a slot) is kept
  // for its next wait.
  let resume: (() => void) | undefined;
  let woken = false;
  const wakeUp = (): void => {
    const r = resume;
    resume = undefined;
    if (r) r();
    else woken = true;
  };
  const onAbort = () => stop.abort();
  core.abort.signal.addEventListener("abort", onAbort, { once: true });
  stop.signal.addEventListener("abort", wakeUp, { once: true });
  let end = m.end;
  let priority = m.priority;
  let order: StreamOptions = { sendOrder: priority };
  const cursor = producer.cursor(m.start, core.options.maxGroupQueue ?? 16);
  const gaps = new DeliveryGaps(core.options.lateGroupWaitMs ?? LATE_GROUP_WAIT_MS);
  // One timer for the earliest deadline (a gap's drop, the datagram tail), re-armed only when
  // an earlier one comes up.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = Infinity;
  const armTimer = (at: number): void => {
    if (at >= timerAt) return;
    if (timer !== undefined) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => {
      timer = undefined;
      timerAt = Infinity;
      wakeUp();
    }, Math.max(1, at - Date.now()));
  };
  // Updates (and the peer's FIN, which cancels) arrive on the same stream.
  const reading = (async () => {
    try {
      while (!(await r.done())) {
        const u = decodeSubscribeUpdate(await r.message("SUBSCRIBE_UPDATE", MAX_CONTROL_MESSAGE));
        end = u.end;
        priority = u.priority;
        order = { sendOrder: priority };
        wakeUp();
        stream.setSendOrder?.(priority);
      }
    } catch (err) {
      if (err instanceof DecodeError) core.streamFailed("subscribe", err);
    }
    stop.abort();
  })();
  // Group streams being sent, at most maxInflight; a counter and one waiter
  // instead of racing a set of promises for every group.
  let inflight = 0;
  const maxInflight = Math.max(1, core.options.maxGroupsInFlight ?? 16);
  const turns = core.options.deliveryTurns;
  let slotFree: (() => void) | undefined;
  const sent = (): void => {
    inflight--;
    const f = slotFree;
    slotFree = undefined;
    f?.();
  };
  // Starts a group's stream; a promise only when the loop must first wait
  // for a slot or a turn (most groups need neither: no promise, no await).
  const send = (group: CachedGroup): Promise<void> | undefined => {
    if (inflight >= maxInflight) return sendAfterWaiting(group);
    const turn = turns?.wait();
    if (turn) return sendAfterWaiting(group, turn);
    inflight++;
    void sendGroup(core, m.id, group, order, sent);
    return undefined;
  };
  // Waits for `turn` (already asked for), or else for a slot and then a turn.
  const sendAfterWaiting = async (group: CachedGroup, turn?: Promise<void>): Promise<void> => {
    if (turn) await turn;
    else {
      while (inflight >= maxInflight) await new Promise<void>((r) => (slotFree = r));
      const next = turns?.wait();
      if (next) await next;
    }
    // Only this loop adds to inflight, so a slot free before the turn is free after it.
    inflight++;
    void sendGroup(core, m.id, group, order, sent);
  };
  // Groups we will not send (skipped, never produced, or missing past the wait): tell the subscriber.
  const writeDrops = async (ranges: ReadonlyArray<readonly [number, number]>): Promise<void> => {
    if (!v05) return;
    for (const [start, last] of ranges) {
      await w.write(
        encodeSubscribeResponse({ kind: "drop", start, end: last, code: 0 }, core.version),
      );
    }
  };
  // The newest group sent as a datagram, repeated on a stream if nothing newer follows in time.
  let tail: CachedGroup | undefined;
  let tailAt = 0;
  const repeatTail = async (): Promise<void> => {
    const g = tail!;
    tail = undefined;
    core.stats.datagramTailRepeats++;
    await send(g);
  };
  let skipped = 0;
  let started = false;
  let finished = false;
  try {
    if (!v05) {
      const latest = producer.latest;
      await w.write(encodeSubscribeResponse({
        kind: "ok",
        priority: producer.info.priority,
        ordered: producer.info.ordered,
        maxLatency: producer.info.maxLatency,
        start: latest === undefined ? undefined : Math.max(latest, m.start ?? latest),
        end: undefined,
      }, core.version));
    }
    for (;;) {
      // Done once everything up to the end was sent, or waited for and dropped.
      if (end !== undefined && gaps.highest >= end && gaps.settledThrough(end)) {
        finished = true;
        break;
      }
      // Gaps past their wait become drops; the end may be settled now.
      if (gaps.open > 0) {
        const expired = gaps.expired();
        if (expired.length > 0) {
          await writeDrops(expired);
          continue;
        }
      }
      // Nothing is awaited between this poll and the wait below, so no write is missed.
      const group = cursor.poll();
      core.stats.groupsSkipped += cursor.skipped - skipped;
      skipped = cursor.skipped;
      if (!group) {
        if (stop.signal.aborted) break;
        if (tail && Date.now() >= tailAt) {
          await repeatTail();
          continue;
        }
        if (producer.closed) {
          finished = true;
          break;
        }
        const gapDeadline = gaps.nextDeadline();
        if (gapDeadline !== undefined) armTimer(gapDeadline);
        if (tail) armTimer(tailAt);
        if (woken) woken = false;
        else {
          await new Promise<void>((r) => {
            resume = r;
            cursor.onChange(wakeUp);
          });
          woken = false;
        }
        continue; // woken by a write, an update, the end or a deadline
      }
      if (end !== undefined && group.sequence > end) {
        // Past the end: what is still missing below it gets the bounded wait.
        gaps.expect(end, m.start);
        continue;
      }
      if (v05 && !started) {
        await w.write(
          encodeSubscribeResponse({ kind: "start", group: group.sequence }, core.version),
        );
      }
      started = true;
      gaps.sent(group.sequence);
      if (datagrams && await sendDatagram(core, m.id, group)) {
        if (!tail || group.sequence > tail.sequence) {
          tail = group;
          tailAt = Date.now() + DATAGRAM_TAIL_MS;
        }
        continue;
      }
      // A newer group on a stream shows the subscriber any datagram lost before it.
      if (tail && group.sequence > tail.sequence) tail = undefined;
      if (stop.signal.aborted) break;
      const waited = send(group);
      if (waited) await waited;
    }
    if (tail && !stop.signal.aborted) await repeatTail();
    while (inflight > 0) await new Promise<void>((r) => (slotFree = r));
    if (finished && v05) {
      await writeDrops(gaps.expired(true));
      await w.write(
        encodeSubscribeResponse({ kind: "end", group: gaps.highest + 1 }, core.version),
      );
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    cursor.close();
    core.abort.signal.removeEventListener("abort", onAbort);
    core.stats.subscriptionsClosed++;
    await w.close();
    r.cancel();
    await reading;
  }
}

/**
 * Sends a single-frame group as a datagram when it fits; false when it
 * must take a stream (several frames, too large, or datagrams not possible
 * on the session right now).
 */
async function sendDatagram(core: SessionCore, id: bigint, group: CachedGroup): Promise<boolean> {
  const frames = group.frames;
  const limit = Math.min(MAX_DATAGRAM_BODY, core.transport.maxDatagramSize ?? 0);
  if (frames.length === 1 && frames[0]!.length < limit) {
    const body = encodeDatagram({
      subscribeId: id,
      sequence: group.sequence,
      timestamp: group.exactTimestamp,
      payload: frames[0]!,
    });
    if (body.length <= limit) {
      try {
        await core.transport.sendDatagram!(body);
      } catch (err) {
        // Best effort by nature: a datagram that cannot go is one the subscriber repairs.
        if (!core.isClosed) core.log("datagram-send", `datagram failed: ${errorText(err)}`);
      }
      core.stats.bytesSent += body.length;
      core.stats.datagramsSent++;
      return true;
    }
  }
  core.stats.datagramFallbacks++;
  return false;
}

// Never rejects: a failed group stream is logged and counted as not sent.
// `done` runs once the stream is finished or failed.
async function sendGroup(
  core: SessionCore,
  id: bigint,
  group: CachedGroup,
  order: StreamOptions,
  done: () => void,
): Promise<void> {
  try {
    const stream = await core.transport.openUni(order);
    const bytes = group.stream(core.version, id);
    const writer = stream.writable.getWriter();
    // One write and the FIN queued together; close settles after the write.
    const written = writer.write(bytes);
    written.catch(() => {}); // reported through close
    await writer.close();
    core.stats.bytesSent += bytes.length;
    core.stats.groupsSent++;
  } catch (err) {
    if (!core.isClosed) core.log("group-send", `group stream failed: ${errorText(err)}`);
  } finally {
    done();
  }
}
