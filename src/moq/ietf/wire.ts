/**
 * Varints per draft: QUIC varints through draft 16, leading-ones varints
 * from draft 17 (`src/wire/leading_ones.ts`). Every IETF message and stream
 * header is written and read through these, so a draft's encoding is chosen
 * in one place.
 */
import {
  DecodeError,
  decodeLeadingOnes,
  Decoder,
  encodeLeadingOnes,
  Encoder,
  leadingOnesSize,
  type StreamReader,
} from "../../wire/mod.ts";
import type { IetfDraft } from "./version.ts";

/** True for the drafts whose varints are leading-ones (17 and later). */
export function leadingOnes(draft: IetfDraft): boolean {
  return draft >= 17;
}

// An Encoder whose varints (lengths and strings included) are leading-ones.
class LeadingOnesEncoder extends Encoder {
  override varint(value: number | bigint): this {
    return this.bytes(encodeLeadingOnes(value));
  }
}

// A Decoder whose varints (lengths and strings included) are leading-ones.
class LeadingOnesDecoder extends Decoder {
  override u62(what = "varint"): bigint {
    const first = this.u8(what);
    const n = leadingOnesSize(first);
    const all = new Uint8Array(n);
    all[0] = first;
    all.set(this.bytes(n - 1, what), 1);
    return decodeLeadingOnes(all);
  }

  override u53(what = "varint"): number {
    const v = this.u62(what);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError("invalid", `Cannot read ${what}: value "${v}" exceeds 2^53-1`);
    }
    return Number(v);
  }
}

/** An encoder for `draft`'s varints. */
export function encoderFor(draft: IetfDraft, capacity = 64): Encoder {
  return leadingOnes(draft) ? new LeadingOnesEncoder(capacity) : new Encoder(capacity);
}

/** A decoder of `body` with `draft`'s varints. */
export function decoderFor(body: Uint8Array, draft: IetfDraft): Decoder {
  return leadingOnes(draft) ? new LeadingOnesDecoder(body) : new Decoder(body);
}

/** Reads one varint of `draft` from a stream; undefined when the stream ended cleanly before it. */
export async function readVarint(
  r: StreamReader,
  draft: IetfDraft,
  what = "varint",
): Promise<number | undefined> {
  if (!leadingOnes(draft)) {
    if (await r.done()) return undefined;
    return await r.u53(what);
  }
  const first = await r.u8();
  if (first === undefined) return undefined;
  const n = leadingOnesSize(first);
  const all = new Uint8Array(n);
  all[0] = first;
  if (n > 1) all.set(await r.bytes(n - 1, what), 1);
  const v = decodeLeadingOnes(all);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new DecodeError("invalid", `Cannot read ${what}: value "${v}" exceeds 2^53-1`);
  }
  return Number(v);
}

/** Reads one varint of `draft` that must be there (a stream ending first is truncated). */
export async function needVarint(r: StreamReader, draft: IetfDraft, what: string): Promise<number> {
  const v = await readVarint(r, draft, what);
  if (v === undefined) {
    throw new DecodeError("truncated", `Cannot read ${what}: stream ended early`);
  }
  return v;
}

/** Ends a message's decoding (`what` names it if bytes are left over) and returns `value`. */
export function done<T>(d: Decoder, what: string, value: T): T {
  d.end(what);
  return value;
}

/** From draft 17 a response travels on its request's own stream, so it no longer names it. */
export function namesRequest(draft: IetfDraft): boolean {
  return draft < 17;
}
