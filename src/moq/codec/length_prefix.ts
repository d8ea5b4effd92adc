/**
 * What every control message shares: the varint length prefix and the size
 * limits decoders apply.
 */
import { Encoder } from "../../wire/mod.ts";

/** Largest control message accepted. */
export const MAX_CONTROL_MESSAGE = 65_536;
/** Paths and track names longer than this are refused. */
export const MAX_NAME = 4096;

/** Wraps a message body in its varint length prefix. */
export function encodeMessage(body: Encoder): Uint8Array<ArrayBuffer> {
  return new Encoder(body.length + 8).message(body).finish();
}
