/**
 * The peer's PUBLISH (drafts 16 and 20): a track pushed unasked. It is taken
 * as an announcement of its namespace (credential permitting, as
 * PUBLISH_NAMESPACE is) plus a subscription already running, which the
 * first `subscribe` of that track takes instead of sending a SUBSCRIBE. Until
 * then its subgroup streams are stopped unread.
 */
import { normalizePath, pathProblem } from "../../path/mod.ts";
import { Subscription } from "../session/mod.ts";
import { type IetfCore, MAX_PUSHED_TRACKS, trackKey, type Upstream } from "./core.ts";
import { refusalCode } from "./refusal.ts";
import { admitNamespace, peerWithdraws } from "./namespaces.ts";
import { requestError } from "./messages.ts";
import { type Publish, publishOk } from "./publish_codec.ts";
import { IetfCode } from "./version.ts";
import { frameControl, Msg } from "./control.ts";
import { encodeSubscribeUpdate } from "./update_codec.ts";
import { finishUpstream } from "./receive.ts";

/**
 * Answers the peer's PUBLISH with `answer` (the control stream in draft 16,
 * the request's stream in draft 20): the pushed subscription, or undefined
 * when refused. `cancel` ends it from our side in draft 20 (the stream's end).
 */
export function peerPushes(
  core: IetfCore,
  p: Publish,
  answer: (bytes: Uint8Array) => void,
  cancel?: () => void,
): Upstream | undefined {
  const d = core.draft;
  const refuse = (code: number, reason: string): undefined => {
    core.stats.announcementsRefused++;
    answer(requestError("subscribe", { requestId: p.requestId, code, reason }, d));
    return undefined;
  };
  const problem = pathProblem(p.path, false);
  if (problem) return refuse(refusalCode("uninterested", d), problem);
  const path = normalizePath(p.path);
  const key = trackKey(path, p.track);
  // The same track pushed twice: the first push is in charge. Draft 16 calls the second a
  // DUPLICATE_SUBSCRIPTION; draft 20 allows several, and sluice is not interested in more.
  if (core.pushed.has(key)) {
    const why = d >= 17 ? "uninterested" : "duplicate";
    return refuse(refusalCode(why, d), "track already published");
  }
  if (core.pushed.size >= MAX_PUSHED_TRACKS) {
    return refuse(refusalCode("too-many", d), "too many published tracks");
  }
  const other = core.upstreamByAlias.get(p.trackAlias);
  if (other) {
    core.violation(IetfCode.DuplicateTrackAlias, `track alias ${p.trackAlias} reused`);
    return undefined;
  }
  const held = core.peerAnnouncements.has(path);
  const refused = admitNamespace(core, path, p.requestId);
  if (refused) return refuse(refused.code, refused.reason);
  const limit = core.options.maxGroupQueue ?? 64;
  const sub = new Subscription(path, p.track, p.requestId, limit, core.options.timers);
  const u: Upstream = {
    sub,
    requestId: p.requestId,
    alias: p.trackAlias,
    done: false,
    pushKey: key,
    claimed: false,
    ...(cancel ? { cancel } : {}),
    ...(p.timescale ? { timescale: p.timescale } : {}),
  };
  core.upstreamById.set(p.requestId, u);
  core.upstreamByAlias.set(p.trackAlias, u);
  core.pushed.set(key, u);
  core.stats.upstreamSubscriptionsOpened++;
  core.aliasWake.resolve();
  core.aliasWake = Promise.withResolvers<void>();
  sub._accept();
  sub._answer();
  // The namespace this PUBLISH announced goes with it, unless PUBLISH_NAMESPACE holds it.
  sub._onClose = () => {
    finishUpstream(core, u);
    if (!held && core.peerAnnouncements.get(path)?.id === p.requestId) peerWithdraws(core, path);
  };
  // Nothing is wanted until a subscription claims the track: FORWARD 0 keeps the publisher's
  // groups (of a track nobody reads) off the link, and the claim's REQUEST_UPDATE asks for them.
  u.resume = (start) => {
    const id = core.takeOurId();
    if (id === undefined) return false;
    const update = encodeSubscribeUpdate({
      requestId: id,
      ...(d < 17 ? { existing: p.requestId } : {}),
      forward: true,
      // A subscription from a given group (a relay continuing a track) asks the push for it.
      ...(start === undefined ? {} : {
        filter: { kind: "absolute" as const, startGroup: start, startObject: 0 },
      }),
    }, d);
    answer(frameControl(Msg.SubscribeUpdate, update, d));
    return true;
  };
  answer(publishOk(p.requestId, d, { forward: false }));
  return u;
}

/**
 * The first subscription of a pushed track takes it (undefined: none pushed,
 * or taken), from group `start` when it names one.
 */
export function claimPushed(
  core: IetfCore,
  path: string,
  track: string,
  start?: number,
): Upstream | undefined {
  const u = core.pushed.get(trackKey(path, track));
  if (!u || u.claimed || u.done) return undefined;
  // Out of request ids for the update: the subscription goes as a SUBSCRIBE instead.
  if (u.resume && !u.resume(start)) return undefined;
  u.claimed = true;
  return u;
}
