/**
 * Broadcast paths: normalising, validating, joining and segment-aware
 * prefix matching, shared by credentials, the ledger, MoQ, the relay and
 * configuration. Imports nothing from the rest of sluice.
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
