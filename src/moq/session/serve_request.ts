/** Serving the peer's one-shot requests (TRACK, FETCH) and asking the application what to serve. */
import {
  decodeFetch,
  decodeTrackRequest,
  encodeTrackInfo,
  MAX_CONTROL_MESSAGE,
} from "../codec/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import type { Sender } from "../sender.ts";
import { type CachedGroup, TrackProducer } from "../track/mod.ts";
import type { StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { StreamError } from "../../transport/mod.ts";
import { MoqCode, MoqError } from "../errors.ts";
import type { SessionCore } from "./core.ts";
import { sendOrder } from "./send_order.ts";
import type { ServeDecision, ServeRequest } from "./types.ts";

/** Asks the application's serve handler; a missing or failing handler serves nothing. */
export async function decide(
  core: SessionCore,
  kind: ServeRequest["kind"],
  path: string,
  track: string,
  start?: number,
): Promise<ServeDecision> {
  const serve = core.policy.serve;
  if (!serve) return "not_found";
  try {
    return await serve({
      kind,
      path,
      track,
      session: core.session,
      ...(start === undefined ? {} : { start }),
    });
  } catch (err) {
    core.log("serve", `serve handler failed: ${errorText(err)}`);
    return "not_found";
  }
}

/** Counts and sends a refusal (as the reset reason) for a request not served from a track. */
export function refuse(
  core: SessionCore,
  w: Sender,
  decision: Exclude<ServeDecision, TrackProducer>,
): void {
  core.stats.subscribeError(decision ?? "not_found");
  w.abort(refusalReason(decision ?? "not_found"));
}

/**
 * The reset that tells the peer why: the moq-lite error code travels where
 * the transport can send reset codes (QMux over WebSocket). Deno's QUIC,
 * under native QUIC and WebTransport, sends a bare FIN, which the peer
 * reads as not found.
 */
export function refusalReason(
  why: "not_found" | "unauthorized" | "gone" | "too_many",
): StreamError {
  const code = why === "unauthorized"
    ? MoqCode.Unauthorized
    : why === "gone"
    ? MoqCode.Old
    : why === "too_many"
    ? MoqCode.BoundsExceeded
    : MoqCode.NotFound;
  return new StreamError("reset", code, why);
}

/** Answers a lite-05 TRACK request with the track's properties, or refuses it. */
export async function serveTrack(core: SessionCore, r: StreamReader, w: Sender): Promise<void> {
  const m = decodeTrackRequest(await r.message("TRACK", MAX_CONTROL_MESSAGE));
  const decision = await decide(core, "track", normalizePath(m.path), m.track);
  if (!(decision instanceof TrackProducer)) {
    // lite-05 subscribers ask TRACK before SUBSCRIBE, so this is where they are refused.
    refuse(core, w, decision);
    return;
  }
  await w.write(encodeTrackInfo(decision.info));
  await w.close();
}

/**
 * Answers a FETCH with one group, from the track's cache or wherever its
 * producer fetches missing groups from (the funnel's ledger, a relay's
 * upstream), or refuses it. The answer is a group: it goes at the FETCH's priority.
 */
export async function serveFetch(
  core: SessionCore,
  r: StreamReader,
  w: Sender,
  setSendOrder: (order: number) => void,
): Promise<void> {
  const m = decodeFetch(await r.message("FETCH", MAX_CONTROL_MESSAGE));
  setSendOrder(sendOrder(m.priority));
  const decision = await decide(core, "fetch", normalizePath(m.path), m.track);
  const track = decision instanceof TrackProducer ? decision : undefined;
  let group;
  let gone = false;
  try {
    group = await track?.fetch(m.group, core.abort.signal);
  } catch (err) {
    // Removed by the source's retention: said with its own code, not as "not found".
    gone = err instanceof MoqError && err.code === "gone";
    if (!gone) core.log("fetch", `fetching group ${m.group} failed: ${errorText(err)}`);
  }
  if (!track || !group) {
    const why = decision === "unauthorized" || decision === "too_many"
      ? decision
      : gone
      ? "gone"
      : "not_found";
    w.abort(refusalReason(why));
    return;
  }
  await writeFetched(core, w, group, track);
}

// A complete group in one write; one still arriving as its frames so far, then each as it
// comes (reset if its publisher abandons it). The track is told the payload bytes sent.
async function writeFetched(
  core: SessionCore,
  w: Sender,
  group: CachedGroup,
  track: TrackProducer,
): Promise<void> {
  if (group.complete) {
    await w.write(group.encoded(core.version));
    track.sent(group, group.size);
  }
  let sent = 0;
  for (let live = group.live; live; live = group.live) {
    if (live.state === "reset") return w.abort(refusalReason("not_found"));
    const count = group.frames.length;
    if (count > sent) {
      const bytes = group.encodedFrom(core.version, sent);
      const payload = group.bytesOf(sent, count);
      sent = count;
      await w.write(bytes);
      track.sent(group, payload);
    } else await live.changed();
  }
  if (sent > 0 && sent < group.frames.length) {
    const count = group.frames.length;
    await w.write(group.encodedFrom(core.version, sent));
    track.sent(group, group.bytesOf(sent, count));
  }
  await w.close();
}
