/**
 * FETCH of one group of the peer's track (what the relay's gap repair and
 * FETCH forwarding ask of a publisher): a standalone FETCH of the whole
 * group, its answer (FETCH_OK, or the draft's refusal), then its fetch
 * stream read back into frames. A peer that never answers is given up on
 * after {@linkcode FETCH_ANSWER_MS}, and then not asked again in that
 * session (@moq/net 0.3.4, which serves no FETCH, answers none in drafts 14
 * and 16).
 */
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import { timeoutSignal } from "../../timers/mod.ts";
import { MoqError } from "../errors.ts";
import { Sender } from "../sender.ts";
import { DEFAULT_MAX_FRAME, DEFAULT_MAX_GROUP, FRAME_COST } from "../track/mod.ts";
import type { FetchOptions, ReceivedGroup } from "../session/mod.ts";
import { type ControlMessage, frameControl, Msg, readControl } from "./control.ts";
import type { IetfCore } from "./core.ts";
import { encodeFetch, type FetchCursor, readFetchHeader, readFetchObject } from "./fetch_codec.ts";
import * as m from "./messages.ts";

/** How long a FETCH waits for its answer and its stream, ms. */
export const FETCH_ANSWER_MS = 5000;

/** One FETCH of ours, waiting for its answer and its stream. */
export interface OurFetch {
  /** FETCH_OK or the refusal, as read. */
  readonly answer: PromiseWithResolvers<ControlMessage>;
  /** The fetch stream, after its header. */
  readonly stream: PromiseWithResolvers<StreamReader>;
}

/** Fetches group `group` of the peer's `path`/`track`; rejects "not_found" when it is not served. */
export async function fetchGroup(
  core: IetfCore,
  path: string,
  track: string,
  group: number,
  options: FetchOptions,
): Promise<ReceivedGroup> {
  const d = core.draft;
  if (core.isClosed) throw new MoqError("closed", "Session closed");
  // A peer that let one FETCH go unanswered (one that serves none) is not asked again.
  if (core.fetchUnanswered) throw new MoqError("not_found", "The peer answers no FETCH");
  const id = core.takeOurId();
  if (id === undefined) throw new MoqError("not_found", "Out of request ids for FETCH");
  const body = encodeFetch({
    requestId: id,
    priority: options.priority ?? 0,
    groupOrder: 1,
    range: {
      kind: "standalone",
      path: normalizePath(path),
      track,
      start: { group, object: 0 },
      end: { group },
    },
  }, d);
  const pending: OurFetch = {
    answer: Promise.withResolvers<ControlMessage>(),
    stream: Promise.withResolvers<StreamReader>(),
  };
  pending.answer.promise.catch(() => {});
  pending.stream.promise.catch(() => {});
  core.ourFetches.set(id, pending);
  const timeout = timeoutSignal(FETCH_ANSWER_MS, core.options.timers);
  const stop = AbortSignal.any([
    core.shutdown.signal,
    timeout,
    ...(options.signal ? [options.signal] : []),
  ]);
  let answered = false;
  const onStop = (): void => {
    if (timeout.aborted && !answered && !core.fetchUnanswered) {
      core.fetchUnanswered = true;
      core.log("fetch", `moq-transport: ${core.remote}: no answer to FETCH; not asking again`);
    }
    const e = new MoqError("not_found", `FETCH of group ${group} got no answer`);
    pending.answer.reject(e);
    pending.stream.reject(e);
  };
  stop.addEventListener("abort", onStop, { once: true });
  let requestStream: StreamReader | undefined;
  let requestOut: Sender | undefined;
  try {
    if (d >= 17) {
      const s = await core.transport.openBidi();
      requestOut = new Sender(s.writable, core.stats);
      requestStream = new StreamReader(s.readable, core.count);
      await requestOut.write(frameControl(Msg.Fetch, body, d));
      const reader = requestStream;
      readControl(reader, d).then(
        (msg) => msg ? pending.answer.resolve(msg) : onStop(),
        () => onStop(),
      );
    } else await core.write(frameControl(Msg.Fetch, body, d));
    const answer = await pending.answer.promise;
    answered = true;
    if (answer.type !== Msg.FetchOk) {
      const e = m.decodeRequestError(answer.body, d, id);
      throw new MoqError(
        e.code === 0x1 ? "unauthorized" : "not_found",
        `FETCH refused: ${e.reason} (${e.code})`,
      );
    }
    const r = await pending.stream.promise;
    return await readGroup(core, r, group, stop);
  } finally {
    stop.removeEventListener("abort", onStop);
    core.ourFetches.delete(id);
    requestStream?.cancel();
    await requestOut?.close().catch(() => {});
  }
}

// The fetch stream's objects of `group`, dense from object 0, as frames (bounded as a group).
async function readGroup(
  core: IetfCore,
  r: StreamReader,
  group: number,
  stop: AbortSignal,
): Promise<ReceivedGroup> {
  const maxFrame = core.options.maxFrameSize ?? DEFAULT_MAX_FRAME;
  const maxGroup = core.options.maxGroupSize ?? DEFAULT_MAX_GROUP;
  const cursor: FetchCursor = { previous: undefined, priority: 0, descending: false };
  const frames: Uint8Array[] = [];
  let bytes = 0;
  const cancel = (): void => r.cancel();
  stop.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const o = await readFetchObject(r, cursor, Math.min(maxFrame, maxGroup - bytes), core.draft);
      if (!o) break;
      if (o.at.group !== group || o.at.object !== frames.length) {
        throw new MoqError(
          "protocol_violation",
          `FETCH of group ${group} sent ${o.at.group}.${o.at.object}`,
        );
      }
      // An object counts FRAME_COST besides its payload, which is what holding it costs.
      bytes += o.payload.length + FRAME_COST;
      frames.push(o.payload);
    }
  } catch (err) {
    if (err instanceof DecodeError || err instanceof MoqError) {
      throw new MoqError("not_found", `FETCH of group ${group}: ${err.message}`);
    }
    throw err;
  } finally {
    stop.removeEventListener("abort", cancel);
    r.cancel();
  }
  if (frames.length === 0) throw new MoqError("not_found", `Group ${group} is not there`);
  core.stats.groupsReceived++;
  return { sequence: group, frames, timestamp: 0, exactTimestamp: 0n };
}

/** A fetch stream arrived (its type read): handed to the FETCH that names it, else dropped. */
export async function fetchStreamArrived(core: IetfCore, r: StreamReader): Promise<void> {
  const id = await readFetchHeader(r, core.draft);
  const pending = core.ourFetches.get(id);
  if (!pending) return r.cancel();
  pending.stream.resolve(r);
}
