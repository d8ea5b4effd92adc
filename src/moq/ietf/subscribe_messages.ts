/** SUBSCRIBE, its filters and byte parameters, and SUBSCRIBE_OK, per draft. */
import { DecodeError, type Decoder, type Encoder } from "../../wire/mod.ts";
import { decoderFor, done, encoderFor, namesRequest } from "./wire.ts";
import type { IetfDraft } from "./version.ts";
import { readProperties, TIMESCALE_PROPERTY } from "./properties.ts";
import {
  type Parameters,
  readNamespace,
  readParameters,
  writeNamespace,
  writeParameters,
} from "./message_fields.ts";

/**
 * Where a SUBSCRIBE starts: draft 14/16 filter types 1-4, and draft 20's
 * forms (no fields: everything; one field: that many groups back from the
 * live edge, 0 being the next group).
 */
export type SubscribeFilter =
  | { readonly kind: "next-group" }
  | { readonly kind: "largest-object" }
  | { readonly kind: "all" }
  | { readonly kind: "relative"; readonly groups: number }
  | {
    readonly kind: "absolute";
    readonly startGroup: number;
    readonly startObject: number;
    readonly endGroup?: number;
  };

/** SUBSCRIBE. */
export interface Subscribe {
  /** Request id (also the track alias sluice answers with). */
  readonly requestId: bigint;
  /** Canonical path of the namespace. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Subscriber priority 0..255. */
  readonly priority: number;
  /** 0 publisher's choice, 1 ascending, 2 descending. */
  readonly groupOrder: number;
  /** Forward objects (false: the subscription is paused). */
  readonly forward: boolean;
  /** The filter. */
  readonly filter: SubscribeFilter;
}

/** Message parameter keys of draft 16 (draft 14 has the same values inline). */
export const MessageParam = {
  Forward: 0x10n,
  SubscriberPriority: 0x20n,
  SubscriptionFilter: 0x21n,
  GroupOrder: 0x22n,
} as const;

/** Draft 20's LOCATION_FILTER: up to four varints, their count deciding the form. */
export function readFilterFields(d: Decoder): SubscribeFilter {
  const fields: number[] = [];
  while (d.remaining > 0) {
    if (fields.length === 4) throw new DecodeError("invalid", "Too many filter fields");
    fields.push(d.u53("filter field"));
  }
  const [a, b, c] = fields;
  if (a === undefined) return { kind: "all" };
  if (b === undefined) return { kind: "relative", groups: a };
  if (c === undefined && a === 0 && b === 0) return { kind: "largest-object" };
  return {
    kind: "absolute",
    startGroup: a,
    startObject: b,
    ...(c === undefined ? {} : { endGroup: a + c }),
  };
}

/** Writes draft 20's LOCATION_FILTER fields. */
export function writeFilterFields(e: Encoder, f: SubscribeFilter): void {
  if (f.kind === "largest-object") e.varint(0).varint(0);
  else if (f.kind === "next-group") e.varint(0);
  else if (f.kind === "relative") e.varint(f.groups);
  else if (f.kind === "absolute") {
    e.varint(f.startGroup).varint(f.startObject);
    if (f.endGroup !== undefined) e.varint(f.endGroup - f.startGroup);
  }
}

/** A filter: its type, then the locations it names (draft 14 inline, draft 16 in a parameter). */
export function readFilter(d: Decoder): SubscribeFilter {
  const type = d.u53("filter type");
  if (type === 1) return { kind: "next-group" };
  if (type === 2) return { kind: "largest-object" };
  if (type === 3 || type === 4) {
    const startGroup = d.u53("start group");
    const startObject = d.u53("start object");
    return type === 3
      ? { kind: "absolute", startGroup, startObject }
      : { kind: "absolute", startGroup, startObject, endGroup: d.u53("end group") };
  }
  throw new DecodeError("invalid", `Unknown filter type "${type}"`);
}

/** Writes a draft 14 / 16 filter. */
export function writeFilter(e: Encoder, f: SubscribeFilter): void {
  // Draft 20's forms have no type of their own here: "everything" is an absolute start at 0,
  // a relative start the live edge.
  if (f.kind === "next-group" || (f.kind === "relative" && f.groups === 0)) e.varint(1);
  else if (f.kind === "largest-object" || f.kind === "relative") e.varint(2);
  else if (f.kind === "all") e.varint(3).varint(0).varint(0);
  else if (f.endGroup === undefined) e.varint(3).varint(f.startGroup).varint(f.startObject);
  else e.varint(4).varint(f.startGroup).varint(f.startObject).varint(f.endGroup);
}

/** A parameter holding a small number (priority, order, forward), or `fallback`. */
export function byteParam(
  params: Parameters,
  key: bigint,
  fallback: number,
  max: number,
): number {
  const v = params.get(key);
  if (v === undefined) return fallback;
  if (typeof v !== "bigint" || v > BigInt(max)) {
    throw new DecodeError("invalid", `Parameter "${key}" out of range`);
  }
  return Number(v);
}

/** Decodes SUBSCRIBE. */
export function decodeSubscribe(body: Uint8Array, draft: IetfDraft): Subscribe {
  const d = decoderFor(body, draft);
  const requestId = d.u62("request id");
  const path = readNamespace(d);
  const track = d.string("track name", 4096);
  if (draft >= 16) {
    // Draft 15 on: priority, order, forward and filter moved into parameters.
    const params = readParameters(d, draft);
    const raw = params.get(MessageParam.SubscriptionFilter);
    let filter: SubscribeFilter = { kind: "largest-object" };
    if (raw instanceof Uint8Array) {
      const f = decoderFor(raw, draft);
      filter = draft >= 20 ? readFilterFields(f) : readFilter(f);
      f.end("subscription filter");
    }
    const groupOrder = byteParam(params, MessageParam.GroupOrder, 0, 2);
    const forward = byteParam(params, MessageParam.Forward, 1, 1) === 1;
    const priority = byteParam(params, MessageParam.SubscriberPriority, 128, 255);
    return done(d, "SUBSCRIBE", { requestId, path, track, priority, groupOrder, forward, filter });
  }
  const priority = d.u8("subscriber priority");
  const groupOrder = d.u8("group order");
  if (groupOrder > 2) throw new DecodeError("invalid", `Unknown group order "${groupOrder}"`);
  const forward = d.bool("forward");
  const filter = readFilter(d);
  readParameters(d, draft);
  return done(d, "SUBSCRIBE", { requestId, path, track, priority, groupOrder, forward, filter });
}

/** Encodes SUBSCRIBE. */
export function encodeSubscribe(m: Subscribe, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft).varint(m.requestId);
  writeNamespace(e, m.path);
  e.string(m.track);
  if (draft >= 16) {
    const filter = encoderFor(draft);
    if (draft >= 20) writeFilterFields(filter, m.filter);
    else writeFilter(filter, m.filter);
    const params: Parameters = new Map<bigint, bigint | Uint8Array>([
      [MessageParam.Forward, m.forward ? 1n : 0n],
      [MessageParam.SubscriberPriority, BigInt(m.priority)],
      [MessageParam.SubscriptionFilter, filter.finish()],
    ]);
    if (m.groupOrder !== 0) params.set(MessageParam.GroupOrder, BigInt(m.groupOrder));
    writeParameters(e, params, draft);
    return e.finish();
  }
  e.u8(m.priority).u8(m.groupOrder).bool(m.forward);
  writeFilter(e, m.filter);
  e.varint(0);
  return e.finish();
}

/** SUBSCRIBE_OK. */
export interface SubscribeOk {
  /** The SUBSCRIBE's request id. */
  readonly requestId: bigint;
  /** The alias the publisher's objects carry. */
  readonly trackAlias: bigint;
  /** The largest location when the track has content (draft 14 only; draft 16 omits it). */
  readonly largest?: { readonly group: number; readonly object: number };
  /**
   * Draft 17 on: the track's TIMESCALE property (units per second of the
   * objects' TIMESTAMP property), which opts the track into timestamps.
   */
  readonly timescale?: number;
}

/** Encodes SUBSCRIBE_OK (draft 14: expires 0, descending order). */
export function encodeSubscribeOk(m: SubscribeOk, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  if (namesRequest(draft)) e.varint(m.requestId);
  e.varint(m.trackAlias);
  if (draft >= 16) {
    // No parameters; from draft 17 the timescale as the only track property (draft 16 peers
    // may reject track extensions they do not expect).
    e.varint(0);
    if (draft >= 17 && m.timescale) e.varint(TIMESCALE_PROPERTY).varint(m.timescale);
    return e.finish();
  }
  e.varint(0).u8(2);
  if (m.largest) e.bool(true).varint(m.largest.group).varint(m.largest.object);
  else e.bool(false);
  e.varint(0);
  return e.finish();
}

/** Decodes SUBSCRIBE_OK (from draft 17, of the request `onStream` its stream carries). */
export function decodeSubscribeOk(body: Uint8Array, draft: IetfDraft, onStream = -1n): SubscribeOk {
  const d = decoderFor(body, draft);
  const requestId = namesRequest(draft) ? d.u62("request id") : onStream;
  const trackAlias = d.u62("track alias");
  if (draft >= 16) {
    readParameters(d, draft);
    // Draft 17 on, the track properties: only TIMESCALE is read (a zero one declares nothing).
    let timescale: bigint | Uint8Array | undefined;
    try {
      if (draft >= 17) timescale = readProperties(d).get(BigInt(TIMESCALE_PROPERTY));
    } catch {
      timescale = undefined; // properties sluice cannot read are passed over, as before
    }
    d.rest(); // draft 16's track extensions: none read
    return {
      requestId,
      trackAlias,
      ...(typeof timescale === "bigint" && timescale > 0n && timescale <= 2n ** 32n
        ? { timescale: Number(timescale) }
        : {}),
    };
  }
  d.u62("expires");
  d.u8("group order");
  const largest = d.bool("content exists")
    ? { group: d.u53("largest group"), object: d.u53("largest object") }
    : undefined;
  readParameters(d, draft);
  return done(d, "SUBSCRIBE_OK", { requestId, trackAlias, ...(largest ? { largest } : {}) });
}
