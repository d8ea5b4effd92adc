/**
 * Applying the peer's SUBSCRIBE_UPDATE / REQUEST_UPDATE to a subscription we
 * serve: its range (groups outside it pass unsent), its priority (the header
 * of each group sent after it) and forward (paused: groups pass unsent). A
 * start moved back is taken from the next group on; FETCH gets the rest.
 */
import { type IetfCore, type ServedSub, SubscribeErrorCode } from "./core.ts";
import * as m from "./messages.ts";
import { trackStatusOk } from "./status_codec.ts";
import type { SubscribeUpdate } from "./update_codec.ts";
import { IetfCode } from "./version.ts";

/**
 * Applies update `u` to subscription `existing`, answering on `write`
 * (drafts 16 and 20: REQUEST_OK with the largest location, or
 * REQUEST_ERROR; draft 14 has no answer). A subscription that never existed,
 * or a draft 14 update that widens the range, is a protocol violation.
 */
export async function applyUpdate(
  core: IetfCore,
  existing: bigint,
  u: SubscribeUpdate,
  write: (bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  const d = core.draft;
  const sub = core.servedSubs.get(existing);
  if (!sub) {
    // The peer's SUBSCRIBE, or (the client role) our PUBLISH: one of either that was sent.
    const ours = existing % 2n === (core.client ? 0n : 1n);
    if (existing >= (ours ? core.ourNextId : core.peerNextId)) {
      return core.violation(IetfCode.ProtocolViolation, `update of unknown request ${existing}`);
    }
    // It existed and ended (or was refused): nothing to update.
    if (d < 16) return;
    return await write(m.requestError("subscribe", {
      requestId: u.requestId,
      code: SubscribeErrorCode.Internal,
      reason: "the subscription ended",
    }, d));
  }
  const range = u.filter ? rangeOf(u.filter, sub) : undefined;
  if (d < 16 && range) {
    // Draft 14 only narrows: the start must not go back nor the end forward.
    const widens = range.start < sub.startGroup ||
      (sub.endGroup !== undefined && (range.end === undefined || range.end > sub.endGroup));
    if (widens || (range.end !== undefined && range.end < range.start)) {
      return core.violation(IetfCode.ProtocolViolation, "SUBSCRIBE_UPDATE widens the range");
    }
  }
  if (range) {
    sub.startGroup = range.start;
    sub.endGroup = range.end;
  }
  if (u.priority !== undefined) sub.priority = u.priority;
  if (u.forward !== undefined) sub.forward = u.forward;
  sub.changed?.();
  if (d < 16) return;
  const latest = sub.producer.latest === undefined
    ? undefined
    : sub.producer.group(sub.producer.latest);
  const largest = latest
    ? { group: latest.sequence, object: Math.max(0, latest.frames.length - 1) }
    : undefined;
  // REQUEST_OK with LARGEST_OBJECT: the form TRACK_STATUS's answer has from draft 16.
  await write(trackStatusOk(u.requestId, largest, d));
}

// The groups a filter lets through now: a start relative to the live edge is resolved against it.
function rangeOf(f: m.SubscribeFilter, sub: ServedSub): { start: number; end?: number } {
  const latest = sub.producer.latest;
  if (f.kind === "absolute") {
    return { start: f.startGroup, ...(f.endGroup === undefined ? {} : { end: f.endGroup }) };
  }
  if (f.kind === "all") return { start: 0 };
  if (latest === undefined) return { start: 0 };
  if (f.kind === "next-group") return { start: latest + 1 };
  if (f.kind === "relative") return { start: Math.max(0, latest + 1 - f.groups) };
  return { start: latest };
}
