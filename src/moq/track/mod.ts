/**
 * A track's source and its readers: the producer the application writes
 * groups to, the ring of recent groups it keeps, and the cursor each
 * subscriber reads through.
 *
 * @module
 */
export { CachedGroup, type GroupFrames } from "./cached_group.ts";
export { MAX_BURST_GROUPS } from "./group_ring.ts";
export { LiveFrames, type LiveState } from "./live_frames.ts";
export { TrackCursor, type TrackObserver } from "./track_cursor.ts";
export {
  type FetchedGroup,
  type GroupFetcher,
  TrackProducer,
  type TrackProducerOptions,
  type WriteGroupOptions,
} from "./track_producer.ts";
