/** SUBSCRIBE, SUBSCRIBE_UPDATE and the publisher's responses on the Subscribe stream. */
import { DecodeError, Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_NAME } from "./length_prefix.ts";
import type { Version } from "./version.ts";

/** SUBSCRIBE: opens a subscription. Groups are absolute sequences; undefined = default. */
export interface Subscribe {
  /** Subscriber-chosen id, unique per session. */
  readonly id: bigint;
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Subscriber priority (0..255). */
  readonly priority: number;
  /** Oldest group first. */
  readonly ordered: boolean;
  /** Max latency in ms; 0 = default. */
  readonly maxLatency: number;
  /** First group wanted; undefined = latest. */
  readonly start: number | undefined;
  /** Last group wanted (inclusive); undefined = unbounded. */
  readonly end: number | undefined;
}

/** SUBSCRIBE_UPDATE: changes a subscription. */
export type SubscribeUpdate = Omit<Subscribe, "id" | "path" | "track">;

function encodeRange(e: Encoder, m: SubscribeUpdate): Encoder {
  return e.u8(m.priority).bool(m.ordered).varint(m.maxLatency)
    .varint(m.start === undefined ? 0 : m.start + 1)
    .varint(m.end === undefined ? 0 : m.end + 1);
}

function decodeRange(d: Decoder): SubscribeUpdate {
  const priority = d.u8("priority");
  const ordered = d.bool("ordered");
  const maxLatency = d.u53("max latency");
  const start = d.u53("start group");
  const end = d.u53("end group");
  return {
    priority,
    ordered,
    maxLatency,
    start: start === 0 ? undefined : start - 1,
    end: end === 0 ? undefined : end - 1,
  };
}

/** Encodes SUBSCRIBE. */
export function encodeSubscribe(m: Subscribe): Uint8Array<ArrayBuffer> {
  return encodeMessage(encodeRange(new Encoder().varint(m.id).string(m.path).string(m.track), m));
}

/** Decodes SUBSCRIBE. */
export function decodeSubscribe(body: Uint8Array): Subscribe {
  const d = new Decoder(body);
  const id = d.u62("subscribe id");
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  const range = decodeRange(d);
  d.end("SUBSCRIBE");
  return { id, path, track, ...range };
}

/** Encodes SUBSCRIBE_UPDATE. */
export function encodeSubscribeUpdate(m: SubscribeUpdate): Uint8Array<ArrayBuffer> {
  return encodeMessage(encodeRange(new Encoder(), m));
}

/** Decodes SUBSCRIBE_UPDATE. */
export function decodeSubscribeUpdate(body: Uint8Array): SubscribeUpdate {
  const d = new Decoder(body);
  const range = decodeRange(d);
  d.end("SUBSCRIBE_UPDATE");
  return range;
}

/** Publisher → subscriber responses on the Subscribe stream, both versions. */
export type SubscribeResponse =
  /** lite-04 SUBSCRIBE_OK (type 0). */
  | {
    readonly kind: "ok";
    readonly priority: number;
    readonly ordered: boolean;
    readonly maxLatency: number;
    readonly start: number | undefined;
    readonly end: number | undefined;
  }
  /** lite-05 SUBSCRIBE_START (type 0): first group that will be delivered. */
  | { readonly kind: "start"; readonly group: number }
  /** lite-05 SUBSCRIBE_END (type 1): exclusive end (first group never delivered). */
  | { readonly kind: "end"; readonly group: number }
  /** SUBSCRIBE_DROP (04 type 1, 05 type 2): groups start..end (inclusive) will not arrive. */
  | { readonly kind: "drop"; readonly start: number; readonly end: number; readonly code: number };

/** Encodes a subscribe response with its type prefix; kinds not in `version` throw. */
export function encodeSubscribeResponse(
  r: SubscribeResponse,
  version: Version,
): Uint8Array<ArrayBuffer> {
  const v05 = version === "moq-lite-05";
  const out = new Encoder(16);
  switch (r.kind) {
    case "ok":
      if (v05) throw new TypeError("Cannot encode SUBSCRIBE_OK on moq-lite-05");
      return out.varint(0).message(encodeRange(new Encoder(), { ...r })).finish();
    case "start":
    case "end":
      if (!v05) throw new TypeError(`Cannot encode SUBSCRIBE_${r.kind} on moq-lite-04`);
      return out.varint(r.kind === "start" ? 0 : 1).message(new Encoder().varint(r.group))
        .finish();
    case "drop":
      return out.varint(v05 ? 2 : 1)
        .message(new Encoder().varint(r.start).varint(r.end).varint(r.code)).finish();
  }
}

/** Decodes a subscribe response body of the given type. */
export function decodeSubscribeResponse(
  type: number,
  body: Uint8Array,
  version: Version,
): SubscribeResponse {
  const d = new Decoder(body);
  let r: SubscribeResponse;
  if (version === "moq-lite-04") {
    if (type === 0) r = { kind: "ok", ...decodeRange(d) };
    else if (type === 1) r = decodeDrop(d);
    else throw new DecodeError("invalid", `Cannot decode subscribe response type "${type}"`);
  } else {
    if (type === 0) r = { kind: "start", group: d.u53("start group") };
    else if (type === 1) r = { kind: "end", group: d.u53("end group") };
    else if (type === 2) r = decodeDrop(d);
    else throw new DecodeError("invalid", `Cannot decode subscribe response type "${type}"`);
  }
  d.end("subscribe response");
  return r;
}

function decodeDrop(d: Decoder): SubscribeResponse {
  return {
    kind: "drop",
    start: d.u53("drop start"),
    end: d.u53("drop end"),
    code: d.u53("drop error code"),
  };
}
