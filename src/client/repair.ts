/** Turning MoQ groups into records, and filling a gap over MoQ FETCH. */
import type { ReceivedGroup, TrackInfo } from "../moq/mod.ts";
import type { LiveLink } from "./live.ts";
import { type Positioned, recordFromFrame } from "./record.ts";
import type { Gap, Sequencer } from "./sequencer.ts";

/** Gaps at most this long are fetched over MoQ before the ledger is asked over HTTP. */
const FETCH_GAP_MAX = 256;
/** FETCH requests in flight at once while filling a gap. */
const FETCH_CONCURRENCY = 16;

/** A live or fetched group as the record of `epoch`; undefined when its frame cannot be read. */
export function readGroup(
  epoch: number,
  group: ReceivedGroup,
  info: TrackInfo | undefined,
): Positioned | undefined {
  const frame = group.frames[0];
  if (!frame) return undefined;
  try {
    return recordFromFrame(epoch, group.sequence - 1, frame, liveWallclock(group, info));
  } catch {
    return undefined; // the ledger supplies it instead
  }
}

/** The commit time a live frame carries: exact when the track's timescale is nanoseconds. */
function liveWallclock(group: ReceivedGroup, info: TrackInfo | undefined): bigint | undefined {
  return info?.timescale === 1_000_000_000 ? group.exactTimestamp : undefined;
}

/** True when the link's publisher declared MoQ group `sequence` dropped. */
export function dropped(link: LiveLink | undefined, sequence: number): boolean {
  return link?.drops.some(([a, b]) => sequence >= a && sequence <= b) ?? false;
}

/**
 * Fetches a gap's groups over MoQ into `seq`, a window at a time; false once
 * one could not be had, or at once for a gap longer than 256 (it is then read
 * from the ledger over HTTP).
 */
export async function fetchGap(
  link: LiveLink,
  track: { readonly broadcast: string; readonly name: string },
  seq: Sequencer,
  gap: Gap,
  closing: () => boolean,
): Promise<boolean> {
  if (gap.to - gap.from >= FETCH_GAP_MAX) return false;
  for (let from = gap.from; from <= gap.to; from += FETCH_CONCURRENCY) {
    const wanted: number[] = [];
    for (let s = from; s <= Math.min(gap.to, from + FETCH_CONCURRENCY - 1); s++) wanted.push(s);
    const got = await Promise.all(wanted.map(async (s) => {
      try {
        const group = await link.fetch(track.broadcast, track.name, s + 1);
        return seq.offer(s, () => readGroup(seq.epoch, group, link.info)) || s <= seq.cursor;
      } catch {
        return false;
      }
    }));
    if (!got.every(Boolean) || closing()) return false;
  }
  return true;
}
