/**
 * Paths, the one home for them: broadcast paths (normalising, validating,
 * joining and segment-aware prefix matching) and track paths (a broadcast
 * and a track name, as a record is posted to), shared by credentials, the
 * ledger, MoQ, the relay and configuration. Imports nothing from the rest of
 * sluice. (How a path is spelled on the MoQ wire is moq/wire_path.ts.)
 *
 * @module
 */
export {
  joinPath,
  MAX_PATH_BYTES,
  normalizePath,
  pathProblem,
  pathSuffix,
  prefixCovers,
  segmentProblem,
  trackNameProblem,
} from "./broadcast_path.ts";
export { parseTrackPatterns, type TrackPattern, TrackPatterns } from "./track_patterns.ts";
export {
  broadcastName,
  MAX_TRACK_PATH_BYTES,
  parseTrackPath,
  trackKey,
  type TrackPath,
} from "./track_path.ts";
