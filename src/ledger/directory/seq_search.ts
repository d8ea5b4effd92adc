/** Binary searches over ascending sequence numbers: a track's segments and a segment's entries. */
import type { LedgerEntry } from "../entry.ts";

/** Index into ascending `segments` (each a segment's first seq) of the one holding `seq`, or -1. */
export function segmentIndexOf(segments: readonly number[], seq: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (segments[mid]! <= seq) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The index of the first entry with seq >= `seq` in ascending `entries`. */
export function indexAtOrAfter(entries: readonly LedgerEntry[], seq: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
