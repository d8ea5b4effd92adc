/** Datagrams (lite-05): a complete single-frame group. */
import { Decoder, Encoder } from "../../wire/mod.ts";
import { checkTimestamp } from "./group.ts";

/** A lite-05 datagram: a complete single-frame group. */
export interface Datagram {
  /** Subscription id. */
  readonly subscribeId: bigint;
  /** Group sequence. */
  readonly sequence: number;
  /** Absolute timestamp in the track timescale, exact. */
  readonly timestamp: bigint;
  /** The frame. */
  readonly payload: Uint8Array;
}

/** Encodes a datagram body. */
export function encodeDatagram(m: Datagram): Uint8Array<ArrayBuffer> {
  return new Encoder(m.payload.length + 24).varint(m.subscribeId).varint(m.sequence)
    .varint(m.timestamp).bytes(m.payload).finish();
}

/** Decodes a datagram body. */
export function decodeDatagram(bytes: Uint8Array): Datagram {
  const d = new Decoder(bytes);
  const subscribeId = d.u62("subscribe id");
  const sequence = d.u53("group sequence");
  // Held to the frame range, so a relay can pass it on as a group stream's first delta.
  const timestamp = checkTimestamp(d.u62("timestamp"));
  return { subscribeId, sequence, timestamp, payload: d.rest() };
}
