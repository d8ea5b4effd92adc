/**
 * Our PUBLISH (drafts 16 and 20, the client role): each open track of the
 * publisher is pushed to the relay unasked, so the relay holds the track (and
 * its alias) before any subscriber asks and needs no SUBSCRIBE round trip for
 * it. The relay's acceptance decides what is sent: FORWARD (0: nothing until a
 * REQUEST_UPDATE says 1, and no cursor holds the track open meanwhile),
 * SUBSCRIBER_PRIORITY and SUBSCRIPTION_FILTER, as a SUBSCRIBE's would. A
 * refusal (a relay that takes no PUBLISH answers NOT_SUPPORTED) leaves the
 * track to SUBSCRIBE, as before; the PUBLISH_NAMESPACE stays either way.
 * Draft 14's PUBLISH is not sent.
 */
import { normalizePath } from "../../path/mod.ts";
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { Sender } from "../sender.ts";
import type { TrackProducer } from "../track/mod.ts";
import { type IetfCore, MAX_PUSHED_TRACKS, trackKey } from "./core.ts";
import { type ControlMessage, frameControl, Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import { decodePublishOk, encodePublish, type PublishAnswer } from "./publish_codec.ts";
import { feed } from "./serve.ts";
import { updates } from "./requests.ts";
import { IetfCode } from "./version.ts";

/** A track a publisher has open. */
export interface OpenTrack {
  /** Its broadcast path (any spelling). */
  readonly path: string;
  /** Its name. */
  readonly track: string;
  /** Where its groups come from. */
  readonly producer: TrackProducer;
}

/** The tracks a publisher has open, for a session that pushes them (IETF PUBLISH). */
export interface OpenTracks {
  /**
   * Tells `listener` of every track open now, then of each one opened
   * (`open` true) or closed (false) later; returns the end of the watch.
   */
  watch(listener: (track: OpenTrack, open: boolean) => void): () => void;
}

/**
 * Tracks one session pushes at once at most (the relay's own bound on pushed
 * tracks): a track opened past it is left to SUBSCRIBE.
 */
export const MAX_OUR_PUSHES: number = MAX_PUSHED_TRACKS;

/** Pushes each track of `source` the policy lets the relay see, for as long as it stays open. */
export function pushTracks(core: IetfCore, source: OpenTracks): void {
  if (core.draft < 16 || core.isClosed) return;
  const running = new Map<string, AbortController>();
  const unwatch = source.watch((t, open) => {
    const path = normalizePath(t.path);
    const key = trackKey(path, t.track);
    if (!open) {
      running.get(key)?.abort();
      running.delete(key);
      return;
    }
    if (running.has(key) || running.size >= MAX_OUR_PUSHES || core.isClosed) return;
    if (core.policy.announceFilter && !core.policy.announceFilter(path, core.session)) return;
    const stop = new AbortController();
    running.set(key, stop);
    const task = pushTrack(core, path, t, stop.signal);
    core.spawn(task.finally(() => {
      if (running.get(key) === stop) running.delete(key);
    }));
  });
  core.shutdown.signal.addEventListener("abort", () => {
    unwatch();
    for (const stop of running.values()) stop.abort();
    running.clear();
  }, { once: true });
}

// One PUBLISH, then the subscription it starts, until the track closes or the relay ends it.
async function pushTrack(
  core: IetfCore,
  path: string,
  t: OpenTrack,
  stopped: AbortSignal,
): Promise<void> {
  const d = core.draft;
  const id = core.takeOurId();
  if (id === undefined) return;
  // Forward 1: sending may start at once; sluice waits for the acceptance all the same.
  const publish = frameControl(
    Msg.Publish,
    encodePublish({ requestId: id, path, track: t.track, trackAlias: id, forward: true }, d),
    d,
  );
  const refused = (msg: ControlMessage): void => {
    const e = m.decodeRequestError(msg.body, d, id);
    core.log("push", `moq-transport: ${core.remote}: PUBLISH refused: ${e.reason} (${e.code})`);
  };
  if (d < 17) {
    const answer = Promise.withResolvers<ControlMessage | undefined>();
    core.ourPushes.set(id, answer.resolve);
    const give = (): void => answer.resolve(undefined);
    const gone = AbortSignal.any([stopped, core.shutdown.signal]);
    gone.addEventListener("abort", give, { once: true });
    try {
      await core.write(publish);
      const msg = await answer.promise;
      if (!msg) {
        // Closed before the relay answered: whatever it answers, the push is over.
        if (!core.isClosed) await core.write(doneMessage(core, id));
        return;
      }
      if (msg.type !== Msg.PublishOk) return refused(msg);
      const a = accepted(core, msg);
      if (a) await run(core, path, t, id, a, stopped, { write: (b) => core.write(b) });
    } finally {
      gone.removeEventListener("abort", give);
      core.ourPushes.delete(id);
    }
    return;
  }
  // Draft 20: a stream of its own; the relay's REQUEST_UPDATEs come on it, its end unsubscribes.
  const stream = await core.transport.openBidi();
  const out = new Sender(stream.writable, core.stats);
  const r = new StreamReader(stream.readable, core.count);
  const cancel = (): void => r.cancel();
  stopped.addEventListener("abort", cancel, { once: true });
  try {
    await out.write(publish);
    const msg = await readControl(r, d);
    if (!msg) return;
    if (msg.type !== Msg.RequestOk) return refused(msg);
    const a = accepted(core, msg);
    if (!a) return;
    const ended = new AbortController();
    const write = (bytes: Uint8Array): Promise<void> => out.write(bytes);
    updates(core, id, r, write).finally(() => ended.abort());
    await run(core, path, t, id, a, stopped, { write, ended: ended.signal });
  } catch (err) {
    if (!stopped.aborted && !core.isClosed) {
      core.log("push", `moq-transport: ${core.remote}: PUBLISH: ${errorText(err)}`);
    }
  } finally {
    stopped.removeEventListener("abort", cancel);
    r.cancel();
    await out.close();
  }
}

// The acceptance's fields, or undefined (the session closed) when it does not decode.
function accepted(core: IetfCore, msg: ControlMessage): PublishAnswer | undefined {
  try {
    return decodePublishOk(msg.body, core.draft);
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    core.violation(IetfCode.ProtocolViolation, `malformed PUBLISH_OK: ${errorText(err)}`);
    return undefined;
  }
}

// Serves the pushed subscription as a SUBSCRIBE with the acceptance's fields would be served.
async function run(
  core: IetfCore,
  path: string,
  t: OpenTrack,
  id: bigint,
  a: PublishAnswer,
  stopped: AbortSignal,
  reply: { write(bytes: Uint8Array): Promise<void>; readonly ended?: AbortSignal },
): Promise<void> {
  // No filter: from the latest group on, as a SUBSCRIBE for the largest object.
  const filter: m.SubscribeFilter = a.filter ?? { kind: "largest-object" };
  const s: m.Subscribe = {
    requestId: id,
    path,
    track: t.track,
    priority: a.priority,
    groupOrder: a.groupOrder,
    forward: a.forward,
    filter,
  };
  const start = filter.kind === "absolute"
    ? filter.startGroup
    : filter.kind === "all"
    ? 0
    : undefined;
  // Draft 16's UNSUBSCRIBE names our request id: it stops this like a served SUBSCRIBE.
  const stop = new AbortController();
  const end = (): void => stop.abort();
  stopped.addEventListener("abort", end, { once: true });
  reply.ended?.addEventListener("abort", end, { once: true });
  core.served.set(id, stop);
  try {
    await feed(core, s, t.producer, start, stop.signal, reply, true);
  } finally {
    stopped.removeEventListener("abort", end);
    core.served.delete(id);
    core.servedSubs.delete(id);
  }
}

// PUBLISH_DONE for a push that ended before it was answered (the track closed).
function doneMessage(core: IetfCore, id: bigint): Uint8Array {
  const body = m.encodePublishDone(
    { requestId: id, code: m.DoneStatus.TrackEnded, streams: 0, reason: "track ended" },
    core.draft,
  );
  return frameControl(Msg.PublishDone, body, core.draft);
}
