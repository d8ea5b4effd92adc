/** TRACK and TRACK_INFO (lite-05): a track's properties on request. */
import { DecodeError, Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_NAME } from "./length_prefix.ts";

/** TRACK (05): asks for a track's properties. */
export interface TrackRequest {
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
}

/** Encodes TRACK. */
export function encodeTrackRequest(m: TrackRequest): Uint8Array<ArrayBuffer> {
  return encodeMessage(new Encoder().string(m.path).string(m.track));
}

/** Decodes TRACK. */
export function decodeTrackRequest(body: Uint8Array): TrackRequest {
  const d = new Decoder(body);
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  d.end("TRACK");
  return { path, track };
}

/** TRACK_INFO (05): the publisher's track properties. */
export interface TrackInfo {
  /** Publisher priority (0..255). */
  readonly priority: number;
  /** Deliver groups in order. */
  readonly ordered: boolean;
  /** Cache retention for non-latest groups, ms. */
  readonly maxLatency: number;
  /** Timestamp units per second (non-zero). */
  readonly timescale: number;
}

/** Encodes TRACK_INFO. */
export function encodeTrackInfo(m: TrackInfo): Uint8Array<ArrayBuffer> {
  if (m.timescale <= 0) throw new RangeError(`Cannot encode timescale "${m.timescale}"`);
  return encodeMessage(
    new Encoder().u8(m.priority).bool(m.ordered).varint(m.maxLatency).varint(m.timescale),
  );
}

/** Decodes TRACK_INFO; a zero timescale is invalid. */
export function decodeTrackInfo(body: Uint8Array): TrackInfo {
  const d = new Decoder(body);
  const priority = d.u8("priority");
  const ordered = d.bool("ordered");
  const maxLatency = d.u53("max latency");
  const timescale = d.u53("timescale");
  d.end("TRACK_INFO");
  if (timescale === 0) throw new DecodeError("invalid", "Cannot decode TRACK_INFO: timescale 0");
  return { priority, ordered, maxLatency, timescale };
}
