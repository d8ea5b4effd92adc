/**
 * A track's source and its readers: the producer the application writes
 * groups to, the ring of recent groups it keeps, and the cursor each
 * subscriber reads through.
 *
 * @module
 */
export { CachedGroup, type GroupFrames } from "./cached_group.ts";
export { MAX_BURST_GROUPS } from "./group_ring.ts";
export {
  type BudgetHolder,
  DEFAULT_MAX_BUFFERED,
  DEFAULT_MAX_FRAME,
  DEFAULT_MAX_GROUP,
  FRAME_COST,
  ReceiveBudget,
} from "./receive_budget.ts";
export { LiveFrames, type LiveState } from "./live_frames.ts";
export { HOLE_WAIT_MS, TrackCursor, type TrackObserver } from "./track_cursor.ts";
export {
  type FetchedGroup,
  type GroupFetcher,
  type GroupPresence,
  TrackProducer,
  type TrackProducerOptions,
  type WriteGroupOptions,
} from "./track_producer.ts";
