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
 * Encodes frames as they follow a GROUP header or answer a FETCH. On lite-05
 * each frame carries a zigzag timestamp delta (baseline 0 per group); all
 * frames of a group share `timestamp` unless `timestamps` gives one per frame.
 */
export function encodeFrames(
  frames: readonly Uint8Array[],
  version: Version,
  timestamp = 0,
  timestamps?: readonly number[],
): Uint8Array<ArrayBuffer> {
  let size = 0;
  for (const f of frames) size += f.length + 16;
  const out = new Encoder(size);
  let previous = 0n;
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
  /** Absolute timestamp in the track timescale (lite-05), else 0. */
  readonly timestamp: number;
  /** The frame's bytes. */
  readonly payload: Uint8Array;
}

/** Decodes a complete run of frames (a group's remainder or a FETCH response). */
export function decodeFrames(bytes: Uint8Array, version: Version, maxFrame = 1 << 26): Frame[] {
  const d = new Decoder(bytes);
  const out: Frame[] = [];
  let ts = 0n;
  while (d.remaining > 0) {
    if (version === "moq-lite-05") {
      ts += zigzagDecode(d.u62("timestamp delta"));
      if (ts < 0n || ts > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new DecodeError("invalid", `Cannot decode frame: timestamp "${ts}" out of range`);
      }
    }
    out.push({ timestamp: Number(ts), payload: d.lengthPrefixed("frame", maxFrame) });
  }
  return out;
}
