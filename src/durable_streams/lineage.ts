import type { TrackPath } from "../path/mod.ts";
import type { StreamConfig } from "./meta.ts";

/**
 * One run of ledger entries a stream reads: its own track from the entry
 * that created it, or (for a fork) the part of a source it inherits. The
 * position of entry `s` is `base + 1 + (s - created)`: for a stream that is
 * not a fork `base` is `created`, so the position is the MoQ group sequence
 * (`s + 1`); a fork's own entries continue after its fork point `base`.
 */
export interface Segment {
  /** The track holding the entries. */
  readonly path: TrackPath;
  /** Ledger sequence of the creating entry (-1 for a track that has none). */
  readonly created: number;
  /** Position just before the segment's first entry. */
  readonly base: number;
  /** Last position this segment contributes (inherited parts end at a fork point). */
  readonly last: number;
}

/** The position of ledger sequence `seq` in a segment. */
export function positionOf(segment: Segment, seq: number): number {
  return segment.base + 1 + (seq - segment.created);
}

/**
 * The position after ledger sequence `seq` (never before the creating entry)
 * in the own segment of the stream that entry `created` made with `config`.
 */
export function ownPosition(created: number, config: StreamConfig, seq: number): number {
  const base = config.fork ? config.fork.at : created;
  return base + 1 + (Math.max(seq, created) - created);
}

/** The ledger sequence at `position` in a segment. */
export function seqAt(segment: Segment, position: number): number {
  return position - 1 - segment.base + segment.created;
}

/** The first ledger sequence a segment reads (its creating entry, or 0). */
export function firstSeq(segment: Segment): number {
  return Math.max(0, segment.created);
}

/** The segments of a fork: the source's, cut at the fork point, then its own. */
export function forkSegments(source: readonly Segment[], at: number, own: Segment): Segment[] {
  const inherited = source
    .filter((s) => s.base < at)
    .map((s) => ({ ...s, last: Math.min(s.last, at) }));
  return [...inherited, own];
}
