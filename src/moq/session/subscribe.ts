/** The consuming side of SUBSCRIBE: opens a subscription to the peer's track and follows its responses. */
import { concatBytes, DecodeError, encodeVarint } from "../../wire/mod.ts";
import {
  BidiType,
  decodeSubscribeResponse,
  encodeSubscribe,
  encodeSubscribeUpdate,
  MAX_CONTROL_MESSAGE,
  type SubscribeResponse,
} from "../codec/mod.ts";
import { MoqError, refusalKind } from "../errors.ts";
import { normalizePath } from "../../path/mod.ts";
import { wirePath } from "../wire_path.ts";
import { errorText } from "../../error_text/mod.ts";
import { SessionClosedError, StreamError } from "../../transport/mod.ts";
import type { SessionCore } from "./core.ts";
import { requestTrackInfo } from "./fetch.ts";
import { ClosableRequest, type RequestStream } from "./request_stream.ts";
import { Subscription } from "./subscription.ts";
import type { SubscribeOptions } from "./types.ts";

/** Registers a subscription to the peer's track and starts its request in its own task. */
export function subscribe(
  core: SessionCore,
  path: string,
  track: string,
  options: SubscribeOptions,
): Subscription {
  const id = core.nextSubscribeId++;
  const limit = options.queueLimit ?? core.options.maxGroupQueue ?? 64;
  const sub = new Subscription(normalizePath(path), track, id, limit, core.timers);
  sub.partial = options.partial ?? false;
  if (core.isClosed) {
    sub._end(new MoqError("closed", "Session closed"));
    return sub;
  }
  if (options.end !== undefined) sub._endGroup = options.end + 1;
  core.subs.set(id, sub);
  core.stats.upstreamSubscriptionsOpened++;
  const closing = new AbortController();
  const signal = options.signal;
  const onAbort = () => sub.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  sub._onClose = () => {
    core.subs.delete(id);
    core.stats.upstreamSubscriptionsClosed++;
    signal?.removeEventListener("abort", onAbort);
    closing.abort();
  };
  if (signal?.aborted) {
    sub.close();
    return sub;
  }
  core.spawn("subscribe", runSubscribe(core, sub, options, closing.signal));
  return sub;
}

async function runSubscribe(
  core: SessionCore,
  sub: Subscription,
  options: SubscribeOptions,
  closing: AbortSignal,
): Promise<void> {
  const request = new ClosableRequest(closing);
  try {
    if (core.version === "moq-lite-05") {
      sub.info = await requestTrackInfo(core, sub.path, sub.track);
      sub._accept();
    }
    if (closing.aborted) return;
    const { r, w } = await request.open(core);
    if (closing.aborted) return request.close();
    await sendSubscribe(sub, options, w);
    sub._sendUpdate = (u) => w.write(encodeSubscribeUpdate(u));
    // A publisher always answers before finishing (lite-04 SUBSCRIBE_OK, lite-05
    // START or END), so a bare FIN is a refusal sent without a reset code.
    if (!(await followResponses(core, sub, r))) {
      throw new MoqError("refused", `Subscription to "${sub.path}" "${sub.track}" refused`);
    }
    sub._publisherDone = true;
    sub._maybeFinish(250);
  } catch (err) {
    if (closing.aborted || core.isClosed) return;
    const error = subscribeFailure(core, sub, err);
    if (error.code === "protocol_violation") core.streamFailed("subscribe", err);
    sub._end(error);
  } finally {
    request.release();
    if (closing.aborted || sub._queue.ended) request.close();
  }
}

async function sendSubscribe(
  sub: Subscription,
  options: SubscribeOptions,
  w: RequestStream["w"],
): Promise<void> {
  sub._current = {
    priority: options.priority ?? 0,
    ordered: options.ordered ?? false,
    maxLatency: options.maxLatency ?? 0,
    start: options.start,
    end: options.end,
  };
  await w.write(concatBytes([
    encodeVarint(BidiType.Subscribe),
    encodeSubscribe({
      id: sub.id,
      path: wirePath(sub.path),
      track: sub.track,
      ...sub._current,
    }),
  ]));
}

// Applies the publisher's responses until it finishes; false when it sent none.
async function followResponses(
  core: SessionCore,
  sub: Subscription,
  r: RequestStream["r"],
): Promise<boolean> {
  let first = true;
  while (!(await r.done())) {
    const type = await r.u53("response type");
    const resp = decodeSubscribeResponse(
      type,
      await r.message("subscribe response", MAX_CONTROL_MESSAGE),
      core.version,
    );
    applyResponse(core, sub, resp, first);
    first = false;
  }
  return !first;
}

function applyResponse(
  core: SessionCore,
  sub: Subscription,
  resp: SubscribeResponse,
  first: boolean,
): void {
  if (core.version === "moq-lite-04") {
    if (first && resp.kind !== "ok") {
      throw new MoqError("protocol_violation", "first response is not SUBSCRIBE_OK");
    }
    if (resp.kind === "ok") {
      sub.info ??= {
        priority: resp.priority,
        ordered: resp.ordered,
        maxLatency: resp.maxLatency,
        timescale: 1000,
      };
      sub._accept();
    }
    sub._answer();
  } else if (resp.kind === "end") {
    sub._endGroup = Math.min(resp.group, sub._endGroup ?? Infinity);
  } else if (resp.kind === "start") {
    sub._startGroup ??= resp.group;
  }
  if (resp.kind === "drop") sub._drop(resp.start, resp.end);
  if (core.version === "moq-lite-05") sub._answer();
}

/** What a failed SUBSCRIBE request means for its subscription. */
function subscribeFailure(core: SessionCore, sub: Subscription, err: unknown): MoqError {
  if (err instanceof MoqError) return err;
  if (err instanceof DecodeError) {
    return new MoqError("protocol_violation", errorText(err), { cause: err });
  }
  const failure = core.transport.translateError(err);
  const refused = failure instanceof StreamError ? refusalKind(failure.wireCode) : undefined;
  if (refused) {
    return new MoqError(refused, `Subscription to "${sub.path}" "${sub.track}" refused`, {
      cause: failure,
    });
  }
  if (failure instanceof SessionClosedError) {
    return new MoqError("closed", `Session closed: ${errorText(failure)}`, { cause: failure });
  }
  return new MoqError(
    "refused",
    `Subscription to "${sub.path}" "${sub.track}" failed: ${errorText(failure)}`,
    { cause: failure },
  );
}
