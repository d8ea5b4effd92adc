/**
 * Our subscriptions to the peer's tracks: SUBSCRIBE out, SUBSCRIBE_OK /
 * error / PUBLISH_DONE in, and the subgroup streams that carry the objects,
 * turned back into groups of frames (whole, or handed over at the first).
 */
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { sleep } from "../../timers/mod.ts";
import { MoqError } from "../errors.ts";
import {
  type BudgetHolder,
  DEFAULT_MAX_FRAME,
  DEFAULT_MAX_GROUP,
  FRAME_COST,
  LiveFrames,
} from "../track/mod.ts";
import { type ReceivedGroup, type SubscribeOptions, Subscription } from "../session/mod.ts";
import { type IetfCore, SubscribeErrorCode, type Upstream } from "./core.ts";
import { frameControl, Msg, readControl } from "./control.ts";
import { Sender } from "../sender.ts";
import { readVarint } from "./wire.ts";
import * as m from "./messages.ts";
import { ObjectStatus, readObject, readSubgroupHeader, type SubgroupHeader } from "./objects.ts";
import { IetfCode } from "./version.ts";
import { FETCH_STREAM } from "./fetch_codec.ts";
import { fetchStreamArrived } from "./fetch_client.ts";
import { claimPushed } from "./publish.ts";

/** How long a subgroup stream may wait for the SUBSCRIBE_OK that names its alias, ms. */
const ALIAS_WAIT_MS = 2000;

/**
 * Subscribes to the peer's track (SUBSCRIBE): iterate the result for
 * groups. It starts at the publisher's live edge unless `start` says
 * otherwise.
 */
export function subscribe(
  core: IetfCore,
  path: string,
  track: string,
  options: SubscribeOptions,
): Subscription {
  const canonical = normalizePath(path);
  const pushed = claimPushed(core, canonical, track, options.start);
  if (pushed) return takePushed(pushed, options);
  const limit = options.queueLimit ?? core.options.maxGroupQueue ?? 64;
  const id = core.ourNextId;
  const sub = new Subscription(canonical, track, id, limit, core.options.timers);
  sub.partial = options.partial ?? false;
  if (options.end !== undefined) sub._endGroup = options.end + 1;
  if (core.isClosed) {
    sub._end(new MoqError("closed", "Session closed"));
    return sub;
  }
  const filter: m.SubscribeFilter = options.start === undefined ? { kind: "largest-object" } : {
    kind: "absolute",
    startGroup: options.start,
    startObject: 0,
    ...(options.end === undefined ? {} : { endGroup: options.end }),
  };
  const encode = (rid: bigint): Uint8Array =>
    frameControl(
      Msg.Subscribe,
      m.encodeSubscribe({
        requestId: rid,
        path: canonical,
        track,
        priority: options.priority ?? 128,
        groupOrder: options.ordered ? 1 : 0,
        forward: true,
        filter,
      }, core.draft),
      core.draft,
    );
  // Through draft 16 on the control stream; from draft 17 on a stream of its own.
  const sent = core.draft >= 17 ? core.takeOurId() : core.sendRequest(encode);
  if (sent === undefined) {
    sub._end(new MoqError("refused", "The peer granted no more request ids"));
    return sub;
  }
  const u: Upstream = { sub, requestId: sent, alias: undefined, done: false };
  core.upstreamById.set(sent, u);
  core.stats.upstreamSubscriptionsOpened++;
  sub._onClose = () => finishUpstream(core, u);
  if (core.draft >= 17) core.spawn(subscribeOnStream(core, u, encode(sent)));
  options.signal?.addEventListener("abort", () => sub.close(), { once: true });
  return sub;
}

// Draft 17 on: the SUBSCRIBE on its own stream, its answers read there; ending our side of
// the stream is the unsubscribe.
async function subscribeOnStream(core: IetfCore, u: Upstream, request: Uint8Array): Promise<void> {
  const d = core.draft;
  let stream;
  try {
    stream = await core.transport.openBidi();
  } catch (err) {
    return finishUpstream(
      core,
      u,
      new MoqError("closed", `Cannot open a stream: ${errorText(err)}`),
    );
  }
  const out = new Sender(stream.writable, core.stats);
  const r = new StreamReader(stream.readable, core.count);
  u.cancel = () => void out.close();
  try {
    await out.write(request);
    for (;;) {
      const msg = await readControl(r, d);
      if (!msg) break;
      if (msg.type === Msg.SubscribeOk) {
        subscribeOk(core, m.decodeSubscribeOk(msg.body, d, u.requestId));
      } else if (msg.type === Msg.RequestError) {
        const e = m.decodeRequestError(msg.body, d, u.requestId);
        const kind = e.code === SubscribeErrorCode.Unauthorized ? "unauthorized" : "not_found";
        finishUpstream(core, u, new MoqError(kind, `Subscribe refused: ${e.reason} (${e.code})`));
        return;
      } else if (msg.type === Msg.PublishDone) {
        m.decodePublishDone(msg.body, d, u.requestId);
        publishDone(u);
      } else {
        return core.violation(
          IetfCode.ProtocolViolation,
          `unexpected message ${msg.type} on a subscription`,
        );
      }
    }
  } catch (err) {
    if (err instanceof DecodeError) {
      core.violation(
        IetfCode.ProtocolViolation,
        `malformed subscription stream: ${errorText(err)}`,
      );
    }
  } finally {
    r.cancel();
    if (!u.done) finishUpstream(core, u);
  }
}

/** PUBLISH_DONE: the publisher finished the subscription; it ends once its groups are in. */
export function publishDone(u: Upstream): void {
  u.done = true;
  u.sub._accept();
  u.sub._publisherDone = true;
  u.sub._maybeFinish(250);
}

// A pushed track (PUBLISH) serves the subscription: it already runs, from the live edge.
function takePushed(u: Upstream, options: SubscribeOptions): Subscription {
  u.sub.partial = options.partial ?? false;
  if (options.end !== undefined) u.sub._endGroup = options.end + 1;
  options.signal?.addEventListener("abort", () => u.sub.close(), { once: true });
  return u.sub;
}

/** SUBSCRIBE_OK: the alias is known, the subscription is accepted. */
export function subscribeOk(core: IetfCore, ok: m.SubscribeOk): void {
  const u = core.upstreamById.get(ok.requestId);
  if (!u) return;
  const other = core.upstreamByAlias.get(ok.trackAlias);
  if (other && other !== u) {
    return core.violation(IetfCode.DuplicateTrackAlias, `track alias ${ok.trackAlias} reused`);
  }
  u.alias = ok.trackAlias;
  core.upstreamByAlias.set(ok.trackAlias, u);
  if (ok.timescale) u.timescale = ok.timescale;
  core.aliasWake.resolve();
  core.aliasWake = Promise.withResolvers<void>();
  u.sub._accept();
  u.sub._answer();
}

/** Our subscription ended (closed by us, refused, or the session went): the peer is told once. */
export function finishUpstream(core: IetfCore, u: Upstream, error?: unknown): void {
  if (!core.upstreamById.delete(u.requestId)) return;
  if (u.alias !== undefined) core.upstreamByAlias.delete(u.alias);
  if (u.pushKey !== undefined) core.pushed.delete(u.pushKey);
  core.stats.upstreamSubscriptionsClosed++;
  if (u.cancel) u.cancel();
  else if (!u.done && error === undefined && !core.isClosed) {
    void core.write(frameControl(Msg.Unsubscribe, m.encodeRequestId(u.requestId, core.draft)));
  }
  u.done = true;
  u.sub._end(error);
}

/** The peer's unidirectional streams, each a subgroup of one of our subscriptions. */
export async function uniLoop(core: IetfCore): Promise<void> {
  for (;;) {
    const stream = await core.transport.acceptUni();
    if (!stream || core.isClosed) return;
    core.spawn(receive(core, new StreamReader(stream.readable, core.count)));
  }
}

// Waits (bounded) for the SUBSCRIBE_OK naming `alias`: objects may outrun the control stream.
async function upstreamFor(core: IetfCore, alias: bigint): Promise<Upstream | undefined> {
  const deadline = Date.now() + ALIAS_WAIT_MS;
  for (;;) {
    const u = core.upstreamByAlias.get(alias);
    if (u || core.isClosed) return u;
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    const late = new AbortController();
    await Promise.race([core.aliasWake.promise, sleep(left, late.signal, core.options.timers)]);
    late.abort();
  }
}

async function receive(core: IetfCore, r: StreamReader): Promise<void> {
  let header: SubgroupHeader;
  try {
    const type = await readVarint(r, core.draft, "stream type");
    if (type === undefined) return;
    if (type === FETCH_STREAM) return await fetchStreamArrived(core, r);
    header = await readSubgroupHeader(r, type, core.draft);
  } catch (err) {
    r.cancel();
    if (err instanceof DecodeError) {
      core.violation(IetfCode.ProtocolViolation, `malformed data stream: ${errorText(err)}`);
    }
    return;
  }
  // A subgroup that starts past the group's first object (draft 18 on says so) cannot be frames.
  if (!header.firstObject) {
    r.cancel();
    return;
  }
  const u = await upstreamFor(core, header.trackAlias);
  // A pushed track nobody subscribed to yet: its groups are not wanted.
  if (!u || u.sub._queue.ended || u.claimed === false) {
    r.cancel();
    return;
  }
  const sub = u.sub;
  sub._receiving(1);
  let live: LiveFrames | undefined;
  // Held against the session's budget; its stream's progress tells the budget it stalled.
  const held: BudgetHolder = { held: 0, progress: () => r.received, reset: () => r.cancel() };
  try {
    await readGroup(core, r, header, sub, (l) => (live = l), held, u.timescale);
  } catch (err) {
    r.cancel();
    if (live) {
      live.reset();
      sub._abandoned(header.group);
    }
    core.stats.groupsReset++;
    // Over a size budget (or cut short) only loses the group; malformed bytes lose the session.
    if (err instanceof DecodeError && err.code !== "truncated" && err.code !== "too_large") {
      core.violation(IetfCode.ProtocolViolation, `malformed object: ${errorText(err)}`);
    }
  } finally {
    core.budget.release(held);
    sub._receiving(-1);
    sub._maybeFinish(250);
  }
}

// A subgroup's objects become a group's frames: whole, or (partial) handed over at the first.
async function readGroup(
  core: IetfCore,
  r: StreamReader,
  header: SubgroupHeader,
  sub: Subscription,
  handedOver: (live: LiveFrames) => void,
  held: BudgetHolder,
  timescale: number | undefined,
): Promise<void> {
  const maxFrame = core.options.maxFrameSize ?? DEFAULT_MAX_FRAME;
  const maxGroup = core.options.maxGroupSize ?? DEFAULT_MAX_GROUP;
  const frames: Uint8Array[] = [];
  let live: LiveFrames | undefined;
  let previous: number | undefined;
  // The first object's TIMESTAMP property is the group's (moq-lite has one per group), in the
  // default timescale (ms): an IETF route answers TRACK with the default properties.
  let stamp = 0n;
  for (;;) {
    // Past the frame and group limits an object is refused; it waits for room in the
    // session's budget, which every group being received shares.
    // An object counts FRAME_COST besides its payload, which is what holding it costs.
    const admit = async (length: number): Promise<void> => {
      const cost = length + FRAME_COST;
      if (length > maxFrame || held.held + cost > maxGroup) {
        throw new DecodeError("too_large", `Cannot read object of ${length} bytes: over the limit`);
      }
      await core.budget.take(cost, held);
    };
    const o = await readObject(r, header, previous, admit, core.draft);
    if (!o) break;
    if (o.payload === undefined && o.status !== ObjectStatus.Normal) {
      if (o.status === ObjectStatus.EndOfGroup || o.status === ObjectStatus.EndOfTrack) break;
      // An object that does not exist leaves a hole no moq-lite group can carry.
      throw new MoqError(
        "protocol_violation",
        `object ${o.id} of group ${header.group} does not exist`,
      );
    }
    if (o.id !== (previous === undefined ? 0 : previous + 1)) {
      // A subgroup starting mid-group, or skipping an object, cannot map to frames.
      throw new MoqError("protocol_violation", `group ${header.group} skips to object ${o.id}`);
    }
    if (previous === undefined && o.timestamp !== undefined && timescale) {
      stamp = toMillis(o.timestamp, timescale);
    }
    previous = o.id;
    const payload = o.payload ?? new Uint8Array(0);
    if (live) {
      live.push(payload);
      continue;
    }
    frames.push(payload);
    if (sub.partial) {
      live = new LiveFrames(stamp);
      for (const f of frames) live.push(f);
      handedOver(live);
      deliver(core, sub, {
        sequence: header.group,
        frames: live.frames,
        timestamp: Number(stamp),
        exactTimestamp: stamp,
        live,
      });
    }
  }
  if (live) return live.finish();
  if (previous === undefined) return; // an empty subgroup carries no group
  deliver(core, sub, {
    sequence: header.group,
    frames,
    timestamp: Number(stamp),
    exactTimestamp: stamp,
  });
}

// A timestamp of `timescale` units a second in milliseconds (the default track timescale).
function toMillis(value: bigint, timescale: number): bigint {
  return value * 1000n / BigInt(timescale);
}

function deliver(core: IetfCore, sub: Subscription, group: ReceivedGroup): void {
  if (sub._deliver(group)) core.stats.groupsReceived++;
}
