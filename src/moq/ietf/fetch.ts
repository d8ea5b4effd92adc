/**
 * Serving the peer's FETCH, standalone or joining one of its subscriptions:
 * FETCH_OK, then one fetch stream with the range's objects in group order,
 * read from the track's cache or wherever its producer fetches missing
 * groups from (the funnel's ledger, a relay's upstream). A group that is
 * not there is left out (a gap the draft reads as "does not exist").
 */
import { errorText } from "../../error_text/mod.ts";
import { normalizePath, pathProblem } from "../../path/mod.ts";
import { MoqError } from "../errors.ts";
import { Sender } from "../sender.ts";
import { type CachedGroup, TrackProducer } from "../track/mod.ts";
import {
  encodeFetchHeader,
  encodeFetchObject,
  type Fetch,
  type FetchCursor,
  type FetchEnd,
  fetchOk,
  type FetchStart,
  type Location,
} from "./fetch_codec.ts";
import { type IetfCore, MAX_FETCH_GROUPS, MAX_SERVED_FETCHES } from "./core.ts";
import { decisionRefusal, refusalCode } from "./refusal.ts";
import * as m from "./messages.ts";
import type { Reply } from "./serve.ts";
import { IetfCode, type IetfDraft } from "./version.ts";

/**
 * FETCH refusal codes: the shared table's (refusal.ts), and the one only a joining FETCH has
 * (draft 14's FETCH_ERROR INVALID_JOINING_SUBSCRIBE_ID, draft 16's REQUEST_ERROR 0x32).
 */
function codes(draft: IetfDraft): { notFound: number; range: number; joining: number } {
  return {
    notFound: refusalCode("does-not-exist", draft),
    range: refusalCode("invalid-range", draft),
    joining: draft < 16 ? 0x7 : 0x32,
  };
}

/** Serves the peer's FETCH, or refuses it with the draft's error. */
export async function serveFetch(
  core: IetfCore,
  f: Fetch,
  reply: Reply = { write: (bytes) => core.write(bytes) },
): Promise<void> {
  const d = core.draft;
  const code = codes(d);
  const refuse = (c: number, reason: string): Promise<void> =>
    reply.write(m.requestError("fetch", { requestId: f.requestId, code: c, reason }, d));
  if (core.fetches.has(f.requestId)) {
    return core.violation(IetfCode.InvalidRequestId, `request id ${f.requestId} reused`);
  }
  if (core.fetches.size >= MAX_SERVED_FETCHES) {
    return await refuse(refusalCode("too-many", d), "too many fetches");
  }
  let path: string;
  let track: string;
  let start: FetchStart | undefined;
  let end: FetchEnd | undefined;
  let joined: Location | undefined;
  if (f.range.kind === "joining") {
    const j = core.servedSubs.get(f.range.joinId);
    if (!j) return await refuse(code.joining, "no such subscription");
    if (d < 17 && !j.largestFilter) {
      return core.violation(IetfCode.ProtocolViolation, "joining FETCH of a non-latest SUBSCRIBE");
    }
    if (!j.largest) return await refuse(code.range, "the track had no objects");
    ({ path, track } = j);
    joined = j.largest;
    start = f.range.start;
    end = j.largest;
  } else {
    const problem = pathProblem(f.range.path, false);
    if (problem) return await refuse(code.notFound, problem);
    path = normalizePath(f.range.path);
    track = f.range.track;
    start = f.range.start;
    end = f.range.end;
  }
  const stop = new AbortController();
  if (reply.ended?.aborted) return;
  reply.ended?.addEventListener("abort", () => stop.abort(), { once: true });
  core.fetches.set(f.requestId, stop);
  try {
    let decision;
    try {
      decision = await core.policy.serve?.({ kind: "fetch", path, track, session: core.session });
    } catch (err) {
      core.log("serve", `moq-transport: serve handler failed: ${errorText(err)}`);
    }
    if (!(decision instanceof TrackProducer)) {
      const refusal = decisionRefusal(decision, d);
      return await refuse(refusal.code, refusal.reason);
    }
    // A relay that has only just subscribed upstream knows no largest yet: an explicit end is
    // taken as asked, and the groups its cache lacks are asked of the upstream.
    const largest = joined ?? largestOf(decision);
    const relative = start !== undefined && "groupsBack" in start;
    if (!largest && (!end || relative)) {
      return await refuse(code.range, "the track has no objects yet");
    }
    const from = startAt(start, largest ?? { group: 0, object: 0 });
    if (largest && before(largest, from)) {
      return await refuse(code.range, "the start is past the largest");
    }
    let last = largest ? endAt(end, largest) : end!;
    if (
      last.group < from.group ||
      (last.object !== undefined && before({ group: last.group, object: last.object }, from))
    ) {
      return await refuse(code.range, "the end is before the start");
    }
    // A range of more groups than one answer holds ends early; FETCH_OK says where.
    if (last.group - from.group >= MAX_FETCH_GROUPS) {
      last = { group: from.group + MAX_FETCH_GROUPS - 1 };
    }
    if (stop.signal.aborted || core.isClosed) return;
    await send(core, f, decision, from, last, stop.signal, reply);
  } finally {
    core.fetches.delete(f.requestId);
  }
}

// The track's largest location now: its latest group and the frames it has so far.
function largestOf(track: TrackProducer): Location | undefined {
  const latest = track.latest === undefined ? undefined : track.group(track.latest);
  if (!latest) return undefined;
  return { group: latest.sequence, object: Math.max(0, latest.frames.length - 1) };
}

function before(a: Location, b: Location): boolean {
  return a.group < b.group || (a.group === b.group && a.object < b.object);
}

// A start counted back from the next group: {largest.group + 1 - n, 0}, never below group 0.
function startAt(start: FetchStart | undefined, largest: Location): Location {
  if (!start) return { group: 0, object: 0 };
  if ("groupsBack" in start) {
    return { group: Math.max(0, largest.group + 1 - start.groupsBack), object: 0 };
  }
  return start;
}

// The requested end, no later than the largest location.
function endAt(end: FetchEnd | undefined, largest: Location): FetchEnd {
  if (!end || end.group > largest.group) return largest;
  if (end.group === largest.group && (end.object ?? Infinity) > largest.object) return largest;
  return end;
}

async function send(
  core: IetfCore,
  f: Fetch,
  track: TrackProducer,
  from: Location,
  last: FetchEnd,
  signal: AbortSignal,
  reply: Reply,
): Promise<void> {
  const d = core.draft;
  const descending = f.groupOrder === 2;
  const stopAll = AbortSignal.any([signal, core.shutdown.signal]);
  // Draft 20 names the last object itself: the last group is read first to know it.
  const read = new Map<number, CachedGroup | undefined>();
  let end = last;
  if (d >= 17 && last.object === undefined) {
    const g = await fetchGroup(core, track, last.group, stopAll);
    read.set(last.group, g);
    end = { group: last.group, object: Math.max(0, (g?.frames.length ?? 1) - 1) };
  }
  await reply.write(fetchOk({ requestId: f.requestId, endOfTrack: false, end }, d, descending));
  let out: Sender | undefined;
  try {
    const stream = await core.transport.openUni({ sendOrder: 0 });
    out = new Sender(stream.writable, core.stats);
    await out.write(encodeFetchHeader(f.requestId, d));
    const cursor: FetchCursor = { previous: undefined, priority: f.priority, descending };
    const count = last.group - from.group + 1;
    for (let i = 0; i < count; i++) {
      const sequence = descending ? last.group - i : from.group + i;
      if (stopAll.aborted) throw new Error("fetch cancelled");
      const g = read.has(sequence)
        ? read.get(sequence)
        : await fetchGroup(core, track, sequence, stopAll);
      read.delete(sequence);
      if (!g) continue;
      const frames = g.frames;
      const lo = sequence === from.group ? from.object : 0;
      const hi = sequence === last.group && last.object !== undefined
        ? Math.min(last.object, frames.length - 1)
        : frames.length - 1;
      for (let o = lo; o <= hi; o++) {
        const at = { group: sequence, object: o };
        await out.write(encodeFetchObject(cursor, at, f.priority, frames[o]!, d));
      }
      if (hi >= lo) track.sent(g, g.bytesOf(lo, hi + 1));
    }
    await out.close();
    core.stats.groupsSent++;
  } catch {
    out?.abort(new Error("fetch abandoned"));
  }
}

// One group of the range; one the source removed (retention) or failed to read is left out.
async function fetchGroup(
  core: IetfCore,
  track: TrackProducer,
  sequence: number,
  signal: AbortSignal,
): Promise<CachedGroup | undefined> {
  try {
    return await track.fetch(sequence, signal);
  } catch (err) {
    if (!(err instanceof MoqError && err.code === "gone")) {
      core.log(
        "fetch",
        `moq-transport: ${core.remote}: fetching group ${sequence}: ${errorText(err)}`,
      );
    }
    return undefined;
  }
}
