import type { LiveFrames, TrackInfo, WriteGroupOptions } from "../../moq/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/** A group received from upstream: complete, or at its first frame with the rest to follow. */
export interface IncomingGroup {
  /** The group while it is still arriving (cut-through); `frames` are then the frames so far. */
  readonly live?: LiveFrames;
  /** The publisher's group sequence. */
  readonly sequence: number;
  /** The group's frames, in order. */
  readonly frames: readonly Uint8Array[];
  /** The group's timestamp in the track timescale, when the publisher sent one. */
  readonly timestamp?: number;
  /** The same timestamp, exact (a nanosecond timescale exceeds 2^53). */
  readonly exactTimestamp?: bigint;
}

/** The relay's one upstream subscription for a track. */
export interface UpstreamTrack {
  /** Groups as they start arriving; ends when the track or the publisher ends. */
  readonly groups: AsyncIterable<IncomingGroup>;
  /** Cancels the upstream subscription. */
  close(): void;
  /** Groups being received right now (fill tasks), when the source can tell. */
  inflight?(): number;
  /** Groups the upstream subscription's queue dropped so far because the relay fell behind. */
  skipped?(): number;
  /**
   * Resolves once the publisher answered the subscription itself (not only
   * the track's properties) or sent a group; a switch keeps the old upstream
   * until then (make before break).
   */
  readonly answered?: Promise<void>;
  /** The track's properties as the publisher gave them (TRACK_INFO), passed on downstream. */
  readonly info?: TrackInfo | undefined;
}

/**
 * How long an old upstream is kept after a switch while the new one has not
 * answered, ms: both feed the ring meanwhile (each sequence is taken once).
 */
const SWITCH_OVERLAP_MS = 5000;

/** The write options for an upstream timestamp: none (0 or absent) lets the ring stamp it. */
export function stamped(timestamp: number | bigint | undefined): WriteGroupOptions {
  return timestamp === undefined || timestamp === 0 || timestamp === 0n ? {} : { timestamp };
}

/** Closes an upstream subscription that may already be gone. */
export function closeQuietly(upstream: UpstreamTrack): void {
  try {
    upstream.close();
  } catch {
    // Upstream already gone.
  }
}

/**
 * Make before break: `old` keeps feeding the ring until `next` answered (or
 * for SWITCH_OVERLAP_MS at most), then it is closed. An old upstream that
 * already ended, or a new one that cannot tell when it answered, goes at once.
 */
export function releaseWhenAnswered(
  old: UpstreamTrack,
  oldDone: boolean,
  next: UpstreamTrack,
  timers: Timers = systemTimers,
): void {
  const answered = next.answered;
  if (oldDone || answered === undefined) return closeQuietly(old);
  const timer = timers.setTimeout(() => closeQuietly(old), SWITCH_OVERLAP_MS);
  const close = (): void => {
    timers.clearTimeout(timer);
    closeQuietly(old);
  };
  answered.then(close, close);
}

/** Resolves once a group still arriving has ended (finished or reset). */
export async function ended(live: LiveFrames): Promise<void> {
  while (live.state === "open") await live.changed();
}
