/**
 * Serving the peer's SUBSCRIBE: one subgroup stream per group of the
 * application's track, one object per frame (followed frame by frame while
 * the group is still arriving), then PUBLISH_DONE.
 */
import { type CachedGroup, FRAME_COST, TrackProducer } from "../track/mod.ts";
import { normalizePath, pathProblem } from "../../path/mod.ts";
import { Sender } from "../sender.ts";
import { concatBytes } from "../../wire/mod.ts";
import { DEFAULT_BYTES_IN_FLIGHT } from "../session/mod.ts";
import { type IetfCore, MAX_SERVED_SUBSCRIPTIONS, type ServedSub, trackKey } from "./core.ts";
import { decisionRefusal, type Refusal, refusalCode } from "./refusal.ts";
import { frameControl, Msg } from "./control.ts";
import * as m from "./messages.ts";
import { encodeObject, encodeSubgroupHeader } from "./objects.ts";
import { IetfCode } from "./version.ts";

/** Concurrent subgroup streams per served subscription before waiting for one to finish. */
const GROUPS_IN_FLIGHT = 16;

/**
 * Where a served subscription's answers go: the control stream (through
 * draft 16), or from draft 17 the SUBSCRIBE's own stream, whose end (`ended`)
 * is the unsubscribe.
 */
export interface Reply {
  /** Writes a framed message. */
  write(bytes: Uint8Array): Promise<void>;
  /** Aborts when the peer ended the subscription's stream. */
  readonly ended?: AbortSignal;
}

/** Serves the peer's SUBSCRIBE from the application's track, or refuses it. */
export async function serveSubscribe(
  core: IetfCore,
  s: m.Subscribe,
  reply: Reply = { write: (bytes) => core.write(bytes) },
): Promise<void> {
  const d = core.draft;
  const refuse = (why: Refusal, reason: string): Promise<void> =>
    reply.write(
      m.requestError("subscribe", {
        requestId: s.requestId,
        code: refusalCode(why, d),
        reason,
      }, d),
    );
  const problem = pathProblem(s.path, false);
  if (problem) return await refuse("does-not-exist", problem);
  if (core.served.size >= MAX_SERVED_SUBSCRIPTIONS) {
    return await refuse("too-many", "too many subscriptions");
  }
  if (s.filter.kind === "absolute" && s.filter.endGroup !== undefined) {
    if (s.filter.endGroup < s.filter.startGroup) {
      return await refuse("invalid-range", "the end group is before the start group");
    }
  }
  const path = normalizePath(s.path);
  // Draft 16 allows one subscription per track and role in a session; drafts 14 and 20 several.
  const key = trackKey(path, s.track);
  if (d === 16 && core.servedTracks.has(key)) {
    return await refuse("duplicate", "already subscribed to this track");
  }
  const start = s.filter.kind === "absolute"
    ? s.filter.startGroup
    : s.filter.kind === "all"
    ? 0
    : undefined;
  // Requests on streams of their own may arrive in any order, so a reused id is caught here.
  if (core.served.has(s.requestId)) {
    return core.violation(IetfCode.InvalidRequestId, `request id ${s.requestId} reused`);
  }
  const stop = new AbortController();
  if (reply.ended?.aborted) return;
  reply.ended?.addEventListener("abort", () => stop.abort(), { once: true });
  core.served.set(s.requestId, stop);
  if (d === 16) {
    core.servedTracks.add(key);
    // An UNSUBSCRIBE frees the track at once, so a new SUBSCRIBE right after it is taken.
    stop.signal.addEventListener("abort", () => core.servedTracks.delete(key), { once: true });
  }
  try {
    const decision = await core.policy.serve?.({
      kind: "subscribe",
      path,
      track: s.track,
      session: core.session,
      ...(start === undefined ? {} : { start }),
    });
    if (!(decision instanceof TrackProducer)) {
      const { code, reason } = decisionRefusal(decision, d);
      return await reply.write(
        m.requestError("subscribe", { requestId: s.requestId, code, reason }, d),
      );
    }
    if (stop.signal.aborted || core.isClosed) return;
    // Every draft: a range whose end group is already complete (a later group exists) SHOULD be
    // refused INVALID_RANGE; a SUBSCRIBE only carries what is still to come.
    if (endsBehind(s.filter, decision.latest)) {
      return await refuse("invalid-range", "the end group is already past");
    }
    core.stats.subscriptionsOpened++;
    await feed(core, s, decision, start, stop.signal, reply);
  } finally {
    if (d === 16) core.servedTracks.delete(key);
    core.served.delete(s.requestId);
    core.servedSubs.delete(s.requestId);
  }
}

/**
 * Sends the track's groups from `start` (default: the latest) until it ends
 * or is cancelled: first SUBSCRIBE_OK, unless the subscription is our own
 * PUBLISH (`pushed`), last PUBLISH_DONE.
 */
export async function feed(
  core: IetfCore,
  s: m.Subscribe,
  track: TrackProducer,
  start: number | undefined,
  signal: AbortSignal,
  reply: Reply,
  pushed = false,
): Promise<void> {
  const d = core.draft;
  const latest = track.latest === undefined ? undefined : track.group(track.latest);
  const largest = latest
    ? { group: latest.sequence, object: Math.max(0, latest.frames.length - 1) }
    : undefined;
  const sub: ServedSub = {
    path: normalizePath(s.path),
    track: s.track,
    producer: track,
    largestFilter: s.filter.kind === "largest-object",
    largest,
    priority: s.priority,
    forward: s.forward,
    // Only an absolute start bounds it: a late group below the live edge still goes, as before.
    startGroup: s.filter.kind === "absolute" ? s.filter.startGroup : 0,
    endGroup: s.filter.kind === "absolute" ? s.filter.endGroup : undefined,
  };
  core.servedSubs.set(s.requestId, sub);
  const stopAll = AbortSignal.any([signal, core.shutdown.signal]);
  const asked = sub.startGroup;
  // A pushed track the subscriber paused opens no cursor (which keeps a funnel's track open)
  // until a REQUEST_UPDATE forwards it (and may say from where).
  if (pushed && !sub.forward && !(await forwarded(sub, stopAll))) {
    return await done(core, s, reply, false, 0);
  }
  if (!pushed) {
    await reply.write(frameControl(
      Msg.SubscribeOk,
      m.encodeSubscribeOk({
        requestId: s.requestId,
        trackAlias: s.requestId,
        ...(largest ? { largest } : {}),
        // Draft 17 on: timestamps travel as object properties, in the track's timescale.
        ...(d >= 17 ? { timescale: track.info.timescale } : {}),
      }, d),
      d,
    ));
  }
  if (pushed) {
    core.stats.subscriptionsOpened++;
    core.stats.tracksPushed++;
  }
  const from = sub.startGroup !== asked ? sub.startGroup : startOf(s.filter, track.latest, start);
  const cursor = track.cursor(from, core.options.maxGroupQueue ?? 16);
  const inflight = new Map<Promise<void>, number>();
  const maxBytes = core.options.maxBytesInFlight ?? DEFAULT_BYTES_IN_FLIGHT;
  const stopped = new Promise<void>((resolve) => {
    if (stopAll.aborted) resolve();
    stopAll.addEventListener("abort", () => resolve(), { once: true });
  });
  let inflightBytes = 0;
  let streams = 0;
  let ended = false;
  try {
    for (;;) {
      const g = await cursor.next(stopAll);
      if (!g) {
        ended = !stopAll.aborted;
        break;
      }
      // SUBSCRIBE_UPDATE may pause the subscription or move its range at any time.
      if (!sub.forward || g.sequence < sub.startGroup) continue;
      if (sub.endGroup !== undefined && g.sequence > sub.endGroup) continue;
      // As over moq-lite: a slow subscriber holds at most 16 groups and 8 MiB of their payload
      // in flight (one group always goes, however large); a group starts only while the
      // session's subscriptions have room in SESSION_BYTES_IN_FLIGHT for what their transport
      // has not taken yet (SessionSends, counted in sendGroup).
      const size = g.size;
      while (
        inflight.size >= GROUPS_IN_FLIGHT ||
        (inflight.size > 0 && inflightBytes + size > maxBytes) ||
        core.sends.full(size)
      ) {
        await Promise.race([...inflight.keys(), core.sends.room(), stopped]);
        if (stopAll.aborted) break;
      }
      if (stopAll.aborted) break;
      streams++;
      const task = sendGroup(core, s.requestId, sub.priority, g, stopAll);
      inflight.set(task, size);
      inflightBytes += size;
      task.finally(() => {
        inflight.delete(task);
        inflightBytes -= size;
      });
    }
    await Promise.all(inflight.keys());
  } finally {
    cursor.close();
    core.stats.subscriptionsClosed++;
  }
  await done(core, s, reply, ended, streams);
}

// PUBLISH_DONE: the track ended, or the subscription did.
async function done(
  core: IetfCore,
  s: m.Subscribe,
  reply: Reply,
  ended: boolean,
  streams: number,
): Promise<void> {
  if (core.isClosed || reply.ended?.aborted) return;
  await reply.write(frameControl(
    Msg.PublishDone,
    m.encodePublishDone({
      requestId: s.requestId,
      code: ended ? m.DoneStatus.TrackEnded : m.DoneStatus.SubscriptionEnded,
      streams,
      reason: ended ? "track ended" : "unsubscribed",
    }, core.draft),
    core.draft,
  ));
}

// Waits until an update sets `sub` forwarding (true), or `signal` aborts (false).
async function forwarded(sub: ServedSub, signal: AbortSignal): Promise<boolean> {
  while (!sub.forward) {
    if (signal.aborted) return false;
    const changed = Promise.withResolvers<void>();
    sub.changed = changed.resolve;
    const stop = (): void => changed.resolve();
    signal.addEventListener("abort", stop, { once: true });
    await changed.promise;
    signal.removeEventListener("abort", stop);
  }
  return !signal.aborted;
}

/** A filter whose end group is below the track's largest group, so all of it is already past. */
export function endsBehind(filter: m.SubscribeFilter, latest: number | undefined): boolean {
  return filter.kind === "absolute" && filter.endGroup !== undefined && latest !== undefined &&
    filter.endGroup < latest;
}

/**
 * The first group a filter asks for, groups being the smallest unit sluice
 * serves: "next group" (or draft 20's zero groups back) after the latest,
 * draft 20's N groups back from the latest, else `start` (undefined: the
 * latest, where the largest object is).
 */
function startOf(
  filter: m.SubscribeFilter,
  latest: number | undefined,
  start: number | undefined,
): number | undefined {
  if (latest === undefined) return start;
  if (filter.kind === "next-group" || (filter.kind === "relative" && filter.groups === 0)) {
    return latest + 1;
  }
  if (filter.kind === "relative") return Math.max(0, latest - (filter.groups - 1));
  return start;
}

// One group on its own subgroup stream, frame by frame as they arrive; reset if it is abandoned.
async function sendGroup(
  core: IetfCore,
  alias: bigint,
  priority: number,
  g: CachedGroup,
  signal: AbortSignal,
): Promise<void> {
  let out: Sender | undefined;
  // The group's bytes count in the session's sends from its start, which waited for room (feed),
  // not only once its stream opened: every start checked meanwhile sees them.
  const sends = core.sends;
  let reserved = g.size + g.frames.length * FRAME_COST;
  sends.took(reserved);
  const unreserve = (): void => {
    if (reserved === 0) return;
    sends.gave(reserved);
    reserved = 0;
  };
  // The subscription ended (UNSUBSCRIBE, its stream's end, the session's): the stream is reset
  // at once, not after a write the subscriber never reads or a frame a stalled publisher never
  // sends; until then the subscription holds its place, its cursor and the upstream track.
  const ended = Promise.withResolvers<void>();
  const abandon = (): void => {
    out?.abort(new Error("unsubscribed"));
    ended.resolve();
  };
  signal.addEventListener("abort", abandon, { once: true });
  try {
    if (signal.aborted) return;
    const stream = await core.transport.openUni({ sendOrder: g.sequence });
    out = new Sender(stream.writable, core.stats);
    if (signal.aborted) return abandon();
    // Draft 17 on, each object carries the group's timestamp (the track declared its timescale).
    const stamp = core.draft >= 17 ? g.exactTimestamp : undefined;
    const header = encodeSubgroupHeader(
      alias,
      g.sequence,
      priority,
      core.draft,
      stamp !== undefined,
    );
    // A complete group (most of them) goes as one write and the FIN, as moq-lite's does: a
    // write per object costs each a promise and turns of the microtask queue.
    // The session counts each write until the transport took it (SessionSends); the group's
    // start waited for room (feed), each later object of a live group waits for it here.
    if (!g.live) {
      const parts = [header];
      for (const f of g.frames) parts.push(encodeObject(f, core.draft, stamp));
      const held = g.size + g.frames.length * FRAME_COST;
      sends.took(held);
      unreserve();
      try {
        await out.write(concatBytes(parts));
      } finally {
        sends.gave(held);
      }
      await out.close();
      core.stats.groupsSent++;
      return;
    }
    await out.write(header);
    // Each object counts as it is written, from here.
    unreserve();
    // The session's oldest stream of a group still arriving writes past its bound (SessionSends).
    sends.opened(ended);
    try {
      let i = 0;
      for (;;) {
        const frames = g.frames;
        while (i < frames.length) {
          const frame = frames[i]!;
          const held = frame.length + FRAME_COST;
          if (!sends.mayWrite(ended, held)) {
            // Past the bound the object waits in its group for room, the group's end or reset,
            // or the subscription's end.
            const live = g.live;
            await Promise.race(
              live ? [sends.room(), ended.promise, live.changed()] : [sends.room(), ended.promise],
            );
            if (signal.aborted) return;
            if (g.live?.state === "reset") break;
            continue;
          }
          i++;
          sends.took(held);
          try {
            await out.write(encodeObject(frame, core.draft, stamp));
          } finally {
            sends.gave(held);
          }
        }
        const live = g.live;
        if (!live || (live.state === "done" && i >= live.frames.length)) break;
        if (live.state === "reset" || signal.aborted) {
          out.abort(new Error("group abandoned"));
          core.stats.groupsReset++;
          return;
        }
        if (i < live.frames.length) continue;
        await Promise.race([live.changed(), ended.promise]);
      }
    } finally {
      sends.closed(ended);
    }
    await out.close();
    core.stats.groupsSent++;
  } catch {
    out?.abort();
  } finally {
    unreserve();
    signal.removeEventListener("abort", abandon);
  }
}
