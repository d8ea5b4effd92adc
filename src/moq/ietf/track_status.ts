/**
 * Answering the peer's TRACK_STATUS: asked of the application as a SUBSCRIBE
 * is (the same credential check, the same source) but of kind "status", as
 * nothing is sent and no subscription stays. The answer carries the track's largest location when
 * it has one: draft 14 as TRACK_STATUS_OK (SUBSCRIBE_OK's form, track alias
 * 0), from draft 16 as REQUEST_OK with the LARGEST_OBJECT parameter.
 */
import { errorText } from "../../error_text/mod.ts";
import { normalizePath, pathProblem } from "../../path/mod.ts";
import { TrackProducer } from "../track/mod.ts";
import { type IetfCore, MAX_STATUS_REQUESTS } from "./core.ts";
import { decisionRefusal, refusalCode } from "./refusal.ts";
import * as m from "./messages.ts";
import type { Reply } from "./serve.ts";
import { trackStatusOk } from "./status_codec.ts";

/** Answers the peer's TRACK_STATUS, or refuses it with the draft's error. */
export async function serveTrackStatus(
  core: IetfCore,
  s: m.Subscribe,
  reply: Reply = { write: (bytes) => core.write(bytes) },
): Promise<void> {
  const d = core.draft;
  const notFound = refusalCode("does-not-exist", d);
  const refuse = (code: number, reason: string): Promise<void> =>
    reply.write(m.requestError("track-status", { requestId: s.requestId, code, reason }, d));
  const problem = pathProblem(s.path, false);
  if (problem) return await refuse(notFound, problem);
  if (core.statusRequests >= MAX_STATUS_REQUESTS) {
    return await refuse(refusalCode("too-many", d), "too many track status requests");
  }
  core.statusRequests++;
  let decision;
  try {
    // Not "subscribe": no cursor will read the track, so a funnel must not keep it open for one.
    decision = await core.policy.serve?.({
      kind: "status",
      path: normalizePath(s.path),
      track: s.track,
      session: core.session,
    });
  } catch (err) {
    core.log("serve", `moq-transport: serve handler failed: ${errorText(err)}`);
  } finally {
    core.statusRequests--;
  }
  if (!(decision instanceof TrackProducer)) {
    const { code, reason } = decisionRefusal(decision, d);
    return await refuse(code, reason);
  }
  const latest = decision.latest === undefined ? undefined : decision.group(decision.latest);
  const largest = latest
    ? { group: latest.sequence, object: Math.max(0, latest.frames.length - 1) }
    : undefined;
  await reply.write(trackStatusOk(s.requestId, largest, d));
}
