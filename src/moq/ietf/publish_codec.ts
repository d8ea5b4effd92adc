/**
 * PUBLISH (0x1D) and its acceptance, drafts 16 and 20: a publisher starting
 * a subscription to one of its tracks unasked. Draft 16 sends it on the
 * control stream and answers it with PUBLISH_OK (0x1E); draft 20 on a stream
 * of its own, answered with REQUEST_OK. Draft 14's inline form is not read.
 */
import { DecodeError } from "../../wire/mod.ts";
import { decoderFor, encoderFor } from "./wire.ts";
import type { IetfDraft } from "./version.ts";
import { frameControl, Msg } from "./control.ts";
import {
  byteParam,
  MessageParam,
  type Parameters,
  readFilter,
  readFilterFields,
  readNamespace,
  readParameters,
  type SubscribeFilter,
  writeFilter,
  writeFilterFields,
  writeNamespace,
  writeParameters,
} from "./messages.ts";
import { readProperties, TIMESCALE_PROPERTY } from "./properties.ts";

/** PUBLISH as sluice reads it. */
export interface Publish {
  /** The publisher's request id (the subscription's, as UNSUBSCRIBE names it). */
  readonly requestId: bigint;
  /** The track's namespace as a path. */
  readonly path: string;
  /** The track's name. */
  readonly track: string;
  /** The alias its subgroup streams carry. */
  readonly trackAlias: bigint;
  /** The publisher sends objects at once (false: only once asked to forward). */
  readonly forward: boolean;
  /** Draft 17 on: the TIMESCALE track property, for the objects' timestamps. */
  readonly timescale?: number;
}

/** Decodes PUBLISH (drafts 16 and 20). */
export function decodePublish(body: Uint8Array, draft: IetfDraft): Publish {
  if (draft < 16) throw new DecodeError("invalid", "PUBLISH is read from draft 16 on");
  const d = decoderFor(body, draft);
  const requestId = d.u62("request id");
  const path = readNamespace(d);
  const track = d.string("track name", 4096);
  const trackAlias = d.u62("track alias");
  const params = readParameters(d, draft);
  const forward = byteParam(params, MessageParam.Forward, 1, 1) === 1;
  let timescale: bigint | Uint8Array | undefined;
  if (draft >= 17) timescale = readProperties(d).get(BigInt(TIMESCALE_PROPERTY));
  d.rest(); // draft 16's track extensions: none read
  return {
    requestId,
    path,
    track,
    trackAlias,
    forward,
    ...(typeof timescale === "bigint" && timescale > 0n && timescale <= 2n ** 32n
      ? { timescale: Number(timescale) }
      : {}),
  };
}

/** Encodes PUBLISH (drafts 16 and 20; no largest location, no track properties). */
export function encodePublish(p: Publish, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft).varint(p.requestId);
  writeNamespace(e, p.path);
  e.string(p.track).varint(p.trackAlias);
  const params: Parameters = new Map([[MessageParam.Forward, p.forward ? 1n : 0n]]);
  writeParameters(e, params, draft);
  return e.finish();
}

/**
 * What the subscriber's acceptance of a PUBLISH asks of the publisher, each
 * a parameter of draft 16's PUBLISH_OK and draft 20's REQUEST_OK: FORWARD
 * (default 1), SUBSCRIBER_PRIORITY (default 128), GROUP_ORDER (default the
 * publisher's) and SUBSCRIPTION_FILTER (default none: unfiltered).
 */
export interface PublishAnswer {
  /** Send objects now (false: not until a REQUEST_UPDATE sets forward). */
  readonly forward: boolean;
  /** Subscriber priority 0..255. */
  readonly priority: number;
  /** 0 the publisher's choice, 1 ascending, 2 descending. */
  readonly groupOrder: number;
  /** The range asked for, if any. */
  readonly filter?: SubscribeFilter;
}

/**
 * The framed acceptance of a PUBLISH: draft 16 PUBLISH_OK, draft 20 REQUEST_OK
 * on its stream; only the fields `answer` names are sent (the rest default).
 */
export function publishOk(
  requestId: bigint,
  draft: IetfDraft,
  answer: Partial<PublishAnswer> = {},
): Uint8Array {
  const e = encoderFor(draft);
  if (draft < 17) e.varint(requestId);
  const params: Parameters = new Map();
  if (answer.forward !== undefined) params.set(MessageParam.Forward, answer.forward ? 1n : 0n);
  if (answer.priority !== undefined) {
    params.set(MessageParam.SubscriberPriority, BigInt(answer.priority));
  }
  if (answer.filter) {
    const f = encoderFor(draft);
    if (draft >= 17) writeFilterFields(f, answer.filter);
    else writeFilter(f, answer.filter);
    params.set(MessageParam.SubscriptionFilter, f.finish());
  }
  if (answer.groupOrder) params.set(MessageParam.GroupOrder, BigInt(answer.groupOrder));
  writeParameters(e, params, draft);
  return frameControl(draft >= 17 ? Msg.RequestOk : Msg.PublishOk, e.finish(), draft);
}

/** Decodes the acceptance of our PUBLISH (draft 16 PUBLISH_OK, draft 20 REQUEST_OK). */
export function decodePublishOk(body: Uint8Array, draft: IetfDraft): PublishAnswer {
  const d = decoderFor(body, draft);
  if (draft < 17) d.u62("request id");
  const params = readParameters(d, draft);
  d.rest(); // draft 20's track properties, if any: none read
  const raw = params.get(MessageParam.SubscriptionFilter);
  let filter: SubscribeFilter | undefined;
  if (raw instanceof Uint8Array) {
    const f = decoderFor(raw, draft);
    filter = draft >= 17 ? readFilterFields(f) : readFilter(f);
    f.end("subscription filter");
  }
  return {
    forward: byteParam(params, MessageParam.Forward, 1, 1) === 1,
    priority: byteParam(params, MessageParam.SubscriberPriority, 128, 255),
    groupOrder: byteParam(params, MessageParam.GroupOrder, 0, 2),
    ...(filter ? { filter } : {}),
  };
}

/** Draft 14's refusal of a PUBLISH it does not read: PUBLISH_ERROR, NOT_SUPPORTED (0x3). */
export function refusePublish14(requestId: bigint, draft: IetfDraft): Uint8Array {
  const body = encoderFor(draft).varint(requestId).varint(0x3).string("not supported").finish();
  return frameControl(Msg.PublishError, body, draft);
}
