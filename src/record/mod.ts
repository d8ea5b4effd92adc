/**
 * A record's identity, shared by the ledger that stores it, the funnel that
 * names it in answers and the client that reads it: the track path a record
 * is posted to, and the group id (`epoch:seq`) it is committed under.
 *
 * @module
 */

export * from "./group_id.ts";
// A record is posted to a track path; its home is path/.
export {
  broadcastName,
  MAX_TRACK_PATH_BYTES,
  parseTrackPath,
  segmentProblem,
  trackKey,
  type TrackPath,
} from "../path/mod.ts";
