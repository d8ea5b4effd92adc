/**
 * SUBSCRIBE_UPDATE (draft 14) and REQUEST_UPDATE (draft 16 on the control
 * stream, draft 20 on the request's own stream) on the wire, held in one
 * form: what the update names, each field absent when it leaves that
 * setting as it was.
 */
import { DecodeError } from "../../wire/mod.ts";
import {
  byteParam,
  MessageParam,
  type Parameters,
  readFilter,
  readFilterFields,
  readParameters,
  type SubscribeFilter,
  writeFilter,
  writeFilterFields,
  writeParameters,
} from "./messages.ts";
import type { IetfDraft } from "./version.ts";
import { decoderFor, encoderFor } from "./wire.ts";

/** An update of a subscription. */
export interface SubscribeUpdate {
  /** The update's own request id. */
  readonly requestId: bigint;
  /** The SUBSCRIBE it updates (drafts 14 and 16; in draft 20 the stream says). */
  readonly existing?: bigint;
  /** The new range (draft 14 always names one: start, and an end group or none). */
  readonly filter?: SubscribeFilter;
  /** The new subscriber priority. */
  readonly priority?: number;
  /** Forward objects, or pause. */
  readonly forward?: boolean;
}

/** Decodes SUBSCRIBE_UPDATE / REQUEST_UPDATE. */
export function decodeSubscribeUpdate(body: Uint8Array, draft: IetfDraft): SubscribeUpdate {
  const d = decoderFor(body, draft);
  const requestId = d.u62("request id");
  if (draft < 16) {
    const existing = d.u62("subscription request id");
    const startGroup = d.u53("start group");
    const startObject = d.u53("start object");
    const end = d.u53("end group"); // plus one; 0 is open-ended
    const priority = d.u8("subscriber priority");
    const forward = d.u8("forward");
    if (forward > 1) throw new DecodeError("invalid", `Forward "${forward}" is not 0 or 1`);
    readParameters(d, draft);
    d.end("SUBSCRIBE_UPDATE");
    const filter: SubscribeFilter = end === 0
      ? { kind: "absolute", startGroup, startObject }
      : { kind: "absolute", startGroup, startObject, endGroup: end - 1 };
    return { requestId, existing, filter, priority, forward: forward === 1 };
  }
  const existing = draft < 17 ? d.u62("existing request id") : undefined;
  const params = readParameters(d, draft);
  d.end("REQUEST_UPDATE");
  const raw = params.get(MessageParam.SubscriptionFilter);
  let filter: SubscribeFilter | undefined;
  if (raw instanceof Uint8Array) {
    const f = decoderFor(raw, draft);
    filter = draft >= 17 ? readFilterFields(f) : readFilter(f);
    f.end("filter");
  }
  const priority = params.has(MessageParam.SubscriberPriority)
    ? byteParam(params, MessageParam.SubscriberPriority, 128, 255)
    : undefined;
  const forward = params.has(MessageParam.Forward)
    ? byteParam(params, MessageParam.Forward, 1, 1) === 1
    : undefined;
  return {
    requestId,
    ...(existing === undefined ? {} : { existing }),
    ...(filter ? { filter } : {}),
    ...(priority === undefined ? {} : { priority }),
    ...(forward === undefined ? {} : { forward }),
  };
}

/** Encodes SUBSCRIBE_UPDATE / REQUEST_UPDATE (draft 14 needs every field). */
export function encodeSubscribeUpdate(m: SubscribeUpdate, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft).varint(m.requestId);
  if (draft < 16) {
    const f = m.filter;
    if (f?.kind !== "absolute" || m.priority === undefined || m.forward === undefined) {
      throw new RangeError(
        "A draft 14 SUBSCRIBE_UPDATE names an absolute range, priority, forward",
      );
    }
    e.varint(m.existing ?? 0n).varint(f.startGroup).varint(f.startObject)
      .varint(f.endGroup === undefined ? 0 : f.endGroup + 1).u8(m.priority).u8(m.forward ? 1 : 0)
      .varint(0);
    return e.finish();
  }
  if (draft < 17) e.varint(m.existing ?? 0n);
  const params: Parameters = new Map();
  if (m.forward !== undefined) params.set(MessageParam.Forward, m.forward ? 1n : 0n);
  if (m.priority !== undefined) params.set(MessageParam.SubscriberPriority, BigInt(m.priority));
  if (m.filter) {
    const f = encoderFor(draft);
    if (draft >= 17) writeFilterFields(f, m.filter);
    else writeFilter(f, m.filter);
    params.set(MessageParam.SubscriptionFilter, f.finish());
  }
  writeParameters(e, params, draft);
  return e.finish();
}
