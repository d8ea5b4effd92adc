/**
 * Track and object properties (draft 16 on; draft-ietf-moq-loc's registry
 * for the two sluice uses): key deltas, an even key's value a varint, an odd
 * key's length-prefixed bytes, running to the end of their block.
 */
import { DecodeError, type Decoder } from "../../wire/mod.ts";

const MAX_PROPERTIES = 64;

/**
 * Properties (track or object, draft 16 on): key deltas, an even key's value
 * a varint, an odd key's length-prefixed bytes, to the end; at most 64.
 */
export function readProperties(d: Decoder): Map<bigint, bigint | Uint8Array> {
  const out = new Map<bigint, bigint | Uint8Array>();
  let key = 0n;
  while (d.remaining > 0) {
    if (out.size >= MAX_PROPERTIES) throw new DecodeError("invalid", "Too many properties");
    key += d.u62("property type");
    out.set(key, key % 2n === 0n ? d.u62("property") : d.lengthPrefixed("property", 8192));
  }
  return out;
}

/** The TIMESCALE track property (draft-ietf-moq-loc's registry). */
export const TIMESCALE_PROPERTY = 0x08;
/** The TIMESTAMP object property, in the track's timescale. */
export const TIMESTAMP_PROPERTY = 0x10;
