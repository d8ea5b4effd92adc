/**
 * The IETF control stream's framing: each message is its type (varint),
 * a 16-bit length and that many bytes (draft 11 on).
 */
import { DecodeError, type StreamReader } from "../../wire/mod.ts";
import type { IetfDraft } from "./version.ts";
import { encoderFor, readVarint } from "./wire.ts";

/** Control message types (draft 14 numbering; draft 16 reuses some numbers as noted). */
export const Msg = {
  SubscribeUpdate: 0x02,
  Subscribe: 0x03,
  SubscribeOk: 0x04,
  SubscribeError: 0x05,
  /** Draft 16: REQUEST_ERROR takes 0x05 (SUBSCRIBE_ERROR's number). */
  RequestError: 0x05,
  PublishNamespace: 0x06,
  PublishNamespaceOk: 0x07,
  /** Draft 16: REQUEST_OK takes 0x07 (PUBLISH_NAMESPACE_OK's number). */
  RequestOk: 0x07,
  PublishNamespaceError: 0x08,
  /** Draft 16, on a SUBSCRIBE_NAMESPACE stream: a namespace under the prefix. */
  Namespace: 0x08,
  PublishNamespaceDone: 0x09,
  Unsubscribe: 0x0a,
  PublishDone: 0x0b,
  PublishNamespaceCancel: 0x0c,
  TrackStatusRequest: 0x0d,
  /** Draft 14: TRACK_STATUS_OK (from draft 16 the answer is REQUEST_OK). */
  TrackStatus: 0x0e,
  /** Draft 14: TRACK_STATUS_ERROR. */
  TrackStatusError: 0x0f,
  /** Draft 16, on a SUBSCRIBE_NAMESPACE stream: a namespace under the prefix ended. */
  NamespaceDone: 0x0e,
  GoAway: 0x10,
  SubscribeNamespace: 0x11,
  SubscribeNamespaceOk: 0x12,
  SubscribeNamespaceError: 0x13,
  UnsubscribeNamespace: 0x14,
  MaxRequestId: 0x15,
  Fetch: 0x16,
  FetchCancel: 0x17,
  FetchOk: 0x18,
  FetchError: 0x19,
  RequestsBlocked: 0x1a,
  Publish: 0x1d,
  PublishOk: 0x1e,
  PublishError: 0x1f,
  ClientSetup: 0x20,
  ServerSetup: 0x21,
  /** Draft 18 on: SUBSCRIBE_NAMESPACE, renumbered (on its own stream). */
  SubscribeNamespaceStream: 0x50,
  /** Draft 17 on: SETUP, the type of each side's setup stream. */
  Setup: 0x2f00,
} as const;

/** One control message as read: its type and payload. */
export interface ControlMessage {
  /** The message type. */
  readonly type: number;
  /** The payload (the length already stripped). */
  readonly body: Uint8Array;
}

/** Frames a control message: type (a varint of `draft`), 16-bit length, payload. */
export function frameControl(
  type: number,
  body: Uint8Array,
  draft: IetfDraft = 14,
): Uint8Array<ArrayBuffer> {
  if (body.length > 0xffff) {
    throw new RangeError(`Cannot send control message ${type}: ${body.length} bytes exceeds 65535`);
  }
  return encoderFor(draft, body.length + 12).varint(type).u8(body.length >> 8)
    .u8(body.length & 0xff).bytes(body).finish();
}

/** Reads the next control message; undefined when the stream ended cleanly between messages. */
export async function readControl(
  r: StreamReader,
  draft: IetfDraft = 14,
): Promise<ControlMessage | undefined> {
  const type = await readVarint(r, draft, "control message type");
  if (type === undefined) return undefined;
  const hi = await r.u8();
  const lo = await r.u8();
  if (hi === undefined || lo === undefined) {
    throw new DecodeError("truncated", "Cannot read control message length: stream ended early");
  }
  const body = await r.bytes(hi * 256 + lo, "control message");
  return { type, body };
}
