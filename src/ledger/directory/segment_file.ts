// The segment file format of the directory backend (see the layout comment in
// directory.ts): frame encoding, scanning a segment, and finding the last frame.
import { decodeBatch, encodeBatch } from "../codec.ts";
import { crc32 } from "./crc32.ts";
import type { LedgerEntry } from "../entry.ts";
import { readRange } from "./file_io.ts";

/** A segment rolls over once it reaches this size. */
export const SEGMENT_BYTES = 1 << 20;
/** Frame header: body length and CRC-32, each a u32 LE. */
export const HEADER = 8;
/** Frame trailer: the body length again, so the last frame can be found from the end. */
export const TRAILER = 4;
/** A segment file name: the first seq it holds, 16 digits. */
export const SEGMENT = /^(\d{16})\.seg$/;

/** The file name of the segment whose first entry is `first`. */
export function segmentName(first: number): string {
  return `${String(first).padStart(16, "0")}.seg`;
}

/** What a scan of a segment from its start found. */
export interface ParsedSegment {
  /** Batches in order. */
  readonly batches: LedgerEntry[][];
  /** Bytes of valid frames from the start. */
  readonly validLength: number;
}

/**
 * Parses a segment's frames from the start, stopping at the first one that is
 * short, fails its checksum or does not number on from `first` and the frame
 * before it (ascending; compaction leaves holes between frames).
 */
export function parseSegment(bytes: Uint8Array, first: number): ParsedSegment {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const batches: LedgerEntry[][] = [];
  let offset = 0;
  let next = first;
  while (offset + HEADER <= bytes.length) {
    const length = view.getUint32(offset, true);
    const sum = view.getUint32(offset + 4, true);
    const end = offset + HEADER + length + TRAILER;
    if (length === 0 || end > bytes.length) break;
    const body = bytes.subarray(offset + HEADER, end - TRAILER);
    if (view.getUint32(end - TRAILER, true) !== length || crc32(body) !== sum) break;
    let entries: LedgerEntry[];
    try {
      entries = decodeBatch(body);
    } catch {
      // An undecodable batch ends the readable part of the file, like a torn write.
      break;
    }
    if (entries[0]!.seq < next) break;
    next = entries[entries.length - 1]!.seq + 1;
    batches.push(entries);
    offset = end;
  }
  return { batches, validLength: offset };
}

/**
 * Entries in ascending order as frames, one per run of consecutive
 * sequences (a batch is numbered consecutively; compaction leaves holes).
 */
export function framesOf(entries: readonly LedgerEntry[]): Uint8Array[] {
  const frames: Uint8Array[] = [];
  let start = 0;
  for (let i = 1; i <= entries.length; i++) {
    if (i === entries.length || entries[i]!.seq !== entries[i - 1]!.seq + 1) {
      frames.push(frame(entries.slice(start, i)));
      start = i;
    }
  }
  return frames;
}

/** One batch as a frame: length, CRC-32, body, length. */
export function frame(entries: readonly LedgerEntry[]): Uint8Array {
  const body = encodeBatch(entries);
  const out = new Uint8Array(HEADER + body.length + TRAILER);
  const view = new DataView(out.buffer);
  view.setUint32(0, body.length, true);
  view.setUint32(4, crc32(body), true);
  out.set(body, HEADER);
  view.setUint32(HEADER + body.length, body.length, true);
  return out;
}

/**
 * The entries of the last frame of a segment when the segment ends with a
 * whole, checksummed frame; undefined when it is empty or its tail is torn.
 */
export async function readLastFrame(
  file: Deno.FsFile,
  size: number,
): Promise<LedgerEntry[] | undefined> {
  if (size < HEADER + TRAILER + 1) return undefined;
  const trailer = await readRange(file, size - TRAILER, size);
  if (trailer.length < TRAILER) return undefined;
  const length = new DataView(trailer.buffer, trailer.byteOffset).getUint32(0, true);
  const start = size - TRAILER - length - HEADER;
  if (length === 0 || start < 0) return undefined;
  const bytes = await readRange(file, start, size);
  return bytes.length === size - start ? lastFrameIn(bytes) : undefined;
}

/**
 * {@link readLastFrame} of a segment's bytes, or of its end: `bytes` must end
 * where the segment does and may start anywhere before its last frame.
 */
export function lastFrameIn(bytes: Uint8Array): LedgerEntry[] | undefined {
  if (bytes.length < HEADER + TRAILER + 1) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(bytes.length - TRAILER, true);
  const start = bytes.length - TRAILER - length - HEADER;
  if (length === 0 || start < 0 || view.getUint32(start, true) !== length) return undefined;
  const body = bytes.subarray(start + HEADER, start + HEADER + length);
  if (crc32(body) !== view.getUint32(start + 4, true)) return undefined;
  try {
    return decodeBatch(body);
  } catch {
    // Undecodable: the caller treats the batch as absent.
    return undefined;
  }
}
