/** GOAWAY: the session should move elsewhere. */
import { Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_NAME } from "./length_prefix.ts";

/** GOAWAY: the session should move to `uri` (may be empty). */
export interface Goaway {
  /** New session URI, or "". */
  readonly uri: string;
}

/** Encodes GOAWAY. */
export function encodeGoaway(m: Goaway): Uint8Array<ArrayBuffer> {
  return encodeMessage(new Encoder().string(m.uri));
}

/** Decodes GOAWAY. */
export function decodeGoaway(body: Uint8Array): Goaway {
  const d = new Decoder(body);
  const uri = d.string("goaway uri", MAX_NAME);
  d.end("GOAWAY");
  return { uri };
}
