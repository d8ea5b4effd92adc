/** FETCH: one group's frames on request. */
import { Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_NAME } from "./length_prefix.ts";

/** FETCH: one group's frames. */
export interface Fetch {
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Subscriber priority. */
  readonly priority: number;
  /** Absolute group sequence. */
  readonly group: number;
}

/** Encodes FETCH. */
export function encodeFetch(m: Fetch): Uint8Array<ArrayBuffer> {
  return encodeMessage(new Encoder().string(m.path).string(m.track).u8(m.priority).varint(m.group));
}

/** Decodes FETCH. */
export function decodeFetch(body: Uint8Array): Fetch {
  const d = new Decoder(body);
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  const priority = d.u8("priority");
  const group = d.u53("group sequence");
  d.end("FETCH");
  return { path, track, priority, group };
}
