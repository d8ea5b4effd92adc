/**
 * What a track's directory holds when it is opened: its segments, and where
 * the tail segment's last whole batch ends (a torn batch after it is cut off).
 */
import type { LedgerEntry } from "../entry.ts";
import { readRange } from "./file_io.ts";
import { lastFrameIn, parseSegment, readLastFrame, SEGMENT } from "./segment_file.ts";

/** A tail segment up to this size is read whole to find its last frame. */
const WHOLE_READ_BYTES = 16 * 1024;

/** The first seq of every segment in `dir`, ascending; leftover `.tmp` files are removed. */
export async function listSegments(dir: string): Promise<number[]> {
  const segments: number[] = [];
  for await (const item of Deno.readDir(dir)) {
    const match = SEGMENT.exec(item.name);
    if (match) segments.push(Number(match[1]));
    else if (item.name.endsWith(".tmp")) await Deno.remove(`${dir}/${item.name}`);
  }
  return segments.sort((a, b) => a - b);
}

/**
 * The tail segment at `path` (starting at seq `first`): its valid size and
 * newest entry (undefined when it holds none). A torn tail, a batch that was
 * never acknowledged, is truncated before anything is served.
 */
export async function scanTail(
  path: string,
  first: number,
): Promise<{ size: number; newest: LedgerEntry | undefined }> {
  // Most tails are small: two calls (stat, read) find the last frame, where opening the file
  // and reading its end takes six. That is most of a restart's time with many tracks.
  if ((await Deno.stat(path)).size <= WHOLE_READ_BYTES) {
    const bytes = await Deno.readFile(path);
    const lastFrame = lastFrameIn(bytes);
    if (lastFrame) return { size: bytes.length, newest: lastFrame[lastFrame.length - 1] };
  }
  const file = await Deno.open(path, { read: true, write: true });
  try {
    const size = (await file.stat()).size;
    const lastFrame = await readLastFrame(file, size);
    if (lastFrame) return { size, newest: lastFrame[lastFrame.length - 1] };
    const bytes = await readRange(file, 0, size);
    const parsed = parseSegment(bytes, first);
    if (parsed.validLength < bytes.length) {
      // A torn tail: a batch that was never acknowledged. Remove it before serving anything.
      await file.truncate(parsed.validLength);
      await file.sync();
    }
    const entries = parsed.batches.flat();
    return { size: parsed.validLength, newest: entries[entries.length - 1] };
  } finally {
    file.close();
  }
}
