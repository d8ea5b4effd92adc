/**
 * TRACK_STATUS's answer on the wire: draft 14's TRACK_STATUS_OK (the form
 * of SUBSCRIBE_OK, track alias 0), from draft 16 REQUEST_OK with the
 * LARGEST_OBJECT parameter (none: the track has no object yet).
 */
import { frameControl, Msg } from "./control.ts";
import {
  decodeSubscribeOk,
  encodeSubscribeOk,
  type Parameters,
  readParameters,
  writeParameters,
} from "./messages.ts";
import type { IetfDraft } from "./version.ts";
import { decoderFor, encoderFor } from "./wire.ts";

/** The LARGEST_OBJECT parameter (a location). */
const LARGEST_OBJECT = 0x09n;

/** A location in a track. */
type Largest = { readonly group: number; readonly object: number };

/** The framed answer to TRACK_STATUS `requestId`. */
export function trackStatusOk(
  requestId: bigint,
  largest: Largest | undefined,
  draft: IetfDraft,
): Uint8Array {
  if (draft < 16) {
    const ok = encodeSubscribeOk(
      { requestId, trackAlias: 0n, ...(largest ? { largest } : {}) },
      draft,
    );
    return frameControl(Msg.TrackStatus, ok, draft);
  }
  const e = encoderFor(draft);
  if (draft < 17) e.varint(requestId);
  const params: Parameters = new Map();
  if (largest) {
    params.set(
      LARGEST_OBJECT,
      encoderFor(draft).varint(largest.group).varint(largest.object).finish(),
    );
  }
  writeParameters(e, params, draft);
  return frameControl(Msg.RequestOk, e.finish(), draft); // no track properties
}

/** The largest location a TRACK_STATUS answer (of `type`) names, if any. */
export function decodeTrackStatusOk(
  type: number,
  body: Uint8Array,
  draft: IetfDraft,
): Largest | undefined {
  if (draft < 16) {
    if (type !== Msg.TrackStatus) throw new Error(`Not TRACK_STATUS_OK: ${type}`);
    return decodeSubscribeOk(body, draft).largest;
  }
  if (type !== Msg.RequestOk) throw new Error(`Not REQUEST_OK: ${type}`);
  const d = decoderFor(body, draft);
  if (draft < 17) d.u62("request id");
  const raw = readParameters(d, draft).get(LARGEST_OBJECT);
  if (!(raw instanceof Uint8Array)) return undefined;
  const l = decoderFor(raw, draft);
  return { group: l.u53("largest group"), object: l.u53("largest object") };
}
