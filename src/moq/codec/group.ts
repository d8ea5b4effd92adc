/** A group stream: its GROUP header, then frames (also the body of a FETCH response). */
import { DecodeError, Decoder, Encoder, zigzagDecode, zigzagEncode } from "../../wire/mod.ts";
import { UniType, type Version } from "./version.ts";

/** GROUP header on a group stream. */
export interface GroupHeader {
  /** The subscription the group belongs to. */
  readonly subscribeId: bigint;
  /** Absolute group sequence. */
  readonly sequence: number;
}

/** Encodes the stream type and GROUP header of a group stream. */
export function encodeGroupStreamHeader(m: GroupHeader): Uint8Array<ArrayBuffer> {
  return new Encoder(20).varint(UniType.Group)
    .message(new Encoder(16).varint(m.subscribeId).varint(m.sequence)).finish();
}

/** Decodes a GROUP body. */
export function decodeGroupHeader(body: Uint8Array): GroupHeader {
  const d = new Decoder(body);
  const subscribeId = d.u62("subscribe id");
  const sequence = d.u53("group sequence");
  d.end("GROUP");
  return { subscribeId, sequence };
}

/**
 * Largest absolute frame timestamp: the first frame of a group carries its
 * timestamp as a zigzag delta from 0, and zigzag doubles it, so it must stay
 * within half the 62-bit varint range (2^61 - 1). In nanoseconds since the
 * Unix epoch that lasts until January 2043.
 */
export const MAX_TIMESTAMP: bigint = (1n << 61n) - 1n;

/** Checks a received running timestamp: never negative, never past {@link MAX_TIMESTAMP}. */
export function checkTimestamp(ts: bigint): bigint {
  if (ts < 0n || ts > MAX_TIMESTAMP) {
    throw new DecodeError("invalid", `Cannot read frame: timestamp "${ts}" out of range`);
  }
  return ts;
}

/**
 * Encodes frames as they follow a GROUP header or answer a FETCH. On lite-05
 * each frame carries a zigzag timestamp delta (baseline 0 per group); all
 * frames of a group share `timestamp` unless `timestamps` gives one per frame.
 * `previous` is the timestamp of the frame before the first (the rest of a
 * group whose earlier frames were already sent).
 */
export function encodeFrames(
  frames: readonly Uint8Array[],
  version: Version,
  timestamp: number | bigint = 0,
  timestamps?: readonly (number | bigint)[],
  previous = 0n,
): Uint8Array<ArrayBuffer> {
  let size = 0;
  for (const f of frames) size += f.length + 16;
  const out = new Encoder(size);
  frames.forEach((frame, i) => {
    if (version === "moq-lite-05") {
      const ts = BigInt(timestamps?.[i] ?? timestamp);
      out.varint(zigzagEncode(ts - previous));
      previous = ts;
    }
    out.lengthPrefixed(frame);
  });
  return out.finish();
}

/** A decoded frame. */
export interface Frame {
  /** Absolute timestamp in the track timescale (lite-05), else 0; approximate above 2^53. */
  readonly timestamp: number;
  /** The same timestamp, exact. */
  readonly exactTimestamp: bigint;
  /** The frame's bytes. */
  readonly payload: Uint8Array;
}

/** Decodes a complete run of frames (a group's remainder or a FETCH response). */
export function decodeFrames(bytes: Uint8Array, version: Version, maxFrame = 1 << 26): Frame[] {
  const d = new Decoder(bytes);
  const out: Frame[] = [];
  let ts = 0n;
  while (d.remaining > 0) {
    if (version === "moq-lite-05") ts = checkTimestamp(ts + zigzagDecode(d.u62("timestamp delta")));
    out.push({
      timestamp: Number(ts),
      exactTimestamp: ts,
      payload: d.lengthPrefixed("frame", maxFrame),
    });
  }
  return out;
}
