/**
 * The answers and small messages every request shares, per draft: OK and
 * error replies, PUBLISH_DONE, request-id-only messages, namespace
 * requests and GOAWAY.
 */
import { decoderFor, done, encoderFor, namesRequest } from "./wire.ts";
import type { IetfDraft } from "./version.ts";
import { frameControl, Msg } from "./control.ts";
import { readNamespace, readParameters, writeNamespace } from "./message_fields.ts";

/** A request's refusal. */
export interface RequestError {
  /** The request id. */
  readonly requestId: bigint;
  /** Error code. */
  readonly code: number;
  /** Reason phrase. */
  readonly reason: string;
}

/** Which request an answer is for: draft 14 answers each kind with its own message types. */
export type RequestKind =
  | "subscribe"
  | "publish-namespace"
  | "subscribe-namespace"
  | "fetch"
  | "track-status";

const OK_TYPE: Record<Exclude<RequestKind, "subscribe" | "fetch" | "track-status">, number> = {
  "publish-namespace": Msg.PublishNamespaceOk,
  "subscribe-namespace": Msg.SubscribeNamespaceOk,
};

const ERROR_TYPE: Record<RequestKind, number> = {
  "subscribe": Msg.SubscribeError,
  "publish-namespace": Msg.PublishNamespaceError,
  "subscribe-namespace": Msg.SubscribeNamespaceError,
  "fetch": Msg.FetchError,
  "track-status": Msg.TrackStatusError,
};

/** The framed acceptance of a namespace request (draft 14 *_OK, draft 16 REQUEST_OK). */
export function requestOk(
  kind: "publish-namespace" | "subscribe-namespace",
  requestId: bigint,
  draft: IetfDraft,
): Uint8Array {
  if (draft >= 16) {
    const e = encoderFor(draft);
    if (namesRequest(draft)) e.varint(requestId);
    return frameControl(Msg.RequestOk, e.varint(0).finish(), draft);
  }
  return frameControl(OK_TYPE[kind], encoderFor(draft).varint(requestId).finish(), draft);
}

/** The framed refusal of a request (draft 14 *_ERROR, draft 16 REQUEST_ERROR). */
export function requestError(kind: RequestKind, m: RequestError, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  if (namesRequest(draft)) e.varint(m.requestId);
  e.varint(m.code);
  if (draft >= 16) e.varint(0); // retry interval: none
  e.string(m.reason);
  return frameControl(draft >= 16 ? Msg.RequestError : ERROR_TYPE[kind], e.finish(), draft);
}

/** Decodes a request's refusal (draft 16 adds a retry interval). */
export function decodeRequestError(
  body: Uint8Array,
  draft: IetfDraft,
  onStream = -1n,
): RequestError {
  const d = decoderFor(body, draft);
  const requestId = namesRequest(draft) ? d.u62("request id") : onStream;
  const code = d.u53("error code");
  if (draft >= 16) d.u62("retry interval");
  return done(d, "request error", { requestId, code, reason: d.string("reason", 1024) });
}

/** PUBLISH_DONE status codes. */
export const DoneStatus = { TrackEnded: 0x2, SubscriptionEnded: 0x3, GoingAway: 0x4 } as const;

/** Encodes PUBLISH_DONE (request id, status, stream count, reason). */
export function encodePublishDone(
  m: RequestError & { readonly streams: number },
  draft: IetfDraft,
): Uint8Array {
  const e = encoderFor(draft);
  if (namesRequest(draft)) e.varint(m.requestId);
  return e.varint(m.code).varint(m.streams).string(m.reason).finish();
}

/** Decodes PUBLISH_DONE. */
export function decodePublishDone(
  body: Uint8Array,
  draft: IetfDraft,
  onStream = -1n,
): RequestError & { readonly streams: number } {
  const d = decoderFor(body, draft);
  const requestId = namesRequest(draft) ? d.u62("request id") : onStream;
  const code = d.u53("status code");
  const streams = d.u53("stream count");
  return done(d, "PUBLISH_DONE", { requestId, code, streams, reason: d.string("reason", 1024) });
}

/** A message that is only a request id (UNSUBSCRIBE, MAX_REQUEST_ID, ...). */
export function encodeRequestId(id: bigint, draft: IetfDraft): Uint8Array {
  return encoderFor(draft).varint(id).finish();
}

/** Decodes a message that is only a request id. */
export function decodeRequestId(body: Uint8Array, what: string, draft: IetfDraft): bigint {
  const d = decoderFor(body, draft);
  return done(d, what, d.u62("request id"));
}

/** The request id a message opens with (for requests sluice refuses without decoding them). */
export function decodeLeadingRequestId(body: Uint8Array, draft: IetfDraft): bigint {
  return decoderFor(body, draft).u62("request id");
}

/** PUBLISH_NAMESPACE / SUBSCRIBE_NAMESPACE: a request id and a namespace (or prefix). */
export interface NamespaceRequest {
  /** The request id. */
  readonly requestId: bigint;
  /** The namespace as a canonical path. */
  readonly path: string;
}

/** Encodes PUBLISH_NAMESPACE, or SUBSCRIBE_NAMESPACE (draft 16: options NAMESPACE). */
export function encodeNamespaceRequest(
  m: NamespaceRequest,
  draft: IetfDraft,
  subscribe = false,
): Uint8Array {
  const e = encoderFor(draft).varint(m.requestId);
  writeNamespace(e, m.path);
  if (subscribe && draft >= 16 && draft < 18) e.varint(1);
  e.varint(0);
  return e.finish();
}

/** Decodes PUBLISH_NAMESPACE, or (`subscribe`) SUBSCRIBE_NAMESPACE. */
export function decodeNamespaceRequest(
  body: Uint8Array,
  what: string,
  draft: IetfDraft,
  subscribe = false,
): NamespaceRequest {
  const d = decoderFor(body, draft);
  const requestId = d.u62("request id");
  const path = readNamespace(d);
  if (subscribe && draft >= 16 && draft < 18) d.u53("subscribe options");
  readParameters(d, draft);
  return done(d, what, { requestId, path });
}

/** Encodes a message that is only a namespace (PUBLISH_NAMESPACE_DONE of draft 14, NAMESPACE...). */
export function encodeNamespace(path: string, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  writeNamespace(e, path);
  return e.finish();
}

/** Decodes a message that is only a namespace. */
export function decodeNamespace(body: Uint8Array, what: string, draft: IetfDraft): string {
  const d = decoderFor(body, draft);
  return done(d, what, readNamespace(d));
}

/** Encodes GOAWAY (the new session URI, possibly empty). */
export function encodeGoaway(uri: string, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft).string(uri);
  if (draft >= 17) e.varint(0); // timeout: none
  return e.finish();
}

/** Decodes GOAWAY. */
export function decodeGoaway(body: Uint8Array, draft: IetfDraft): string {
  const d = decoderFor(body, draft);
  const uri = d.string("new session uri", 8192);
  if (draft >= 17) {
    d.u62("timeout");
    if (d.remaining > 0) d.u62("request id"); // draft 18 on: optional
  }
  return done(d, "GOAWAY", uri);
}
