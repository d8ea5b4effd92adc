import { MAX_PATH_BYTES, segmentProblem } from "./broadcast_path.ts";

/**
 * A validated track address: a broadcast path of one or more segments and
 * a track name. Construct one with {@link parseTrackPath}; every backend may
 * trust its segments to be safe file names, object-key parts and SQL values.
 */
export interface TrackPath {
  /** Broadcast path segments, each non-empty and free of `/`, `.`-only and control characters. */
  readonly broadcast: readonly string[];
  /** Track name, with the same rules as a segment. */
  readonly track: string;
}

// The ledger's API has always offered these; the rules themselves live in src/path.
export { MAX_PATH_BYTES as MAX_TRACK_PATH_BYTES, segmentProblem } from "./broadcast_path.ts";

/**
 * Parses the raw (percent-encoded) segments after `/tracks/` into a
 * {@link TrackPath}. Throws `SyntaxError` with a client-readable reason.
 *
 * @example
 * ```ts
 * parseTrackPath("room/1/chat"); // { broadcast: ["room", "1"], track: "chat" }
 * ```
 */
export function parseTrackPath(raw: string): TrackPath {
  const parts = raw.split("/");
  const decoded: string[] = [];
  for (const part of parts) {
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      throw new SyntaxError(`Invalid track path: segment "${part}" is not valid percent-encoding`);
    }
    const problem = segmentProblem(segment);
    if (problem) throw new SyntaxError(`Invalid track path: ${problem}`);
    decoded.push(segment);
  }
  if (decoded.length < 2) {
    throw new SyntaxError(
      "Invalid track path: expected /tracks/<broadcast path>/<track name> with at least two segments",
    );
  }
  const joined = decoded.join("/");
  // A UTF-16 unit is at most 3 UTF-8 bytes, so short paths need no encoding.
  if (
    joined.length * 3 > MAX_PATH_BYTES &&
    new TextEncoder().encode(joined).length > MAX_PATH_BYTES
  ) {
    throw new SyntaxError(`Invalid track path: longer than ${MAX_PATH_BYTES} bytes`);
  }
  const track = decoded.pop()!;
  return { broadcast: decoded, track };
}

// Paths are immutable and the hot path asks for these strings on every
// request, so they are computed once per path object.
const names = new WeakMap<TrackPath, { broadcast: string; key: string }>();

function namesOf(path: TrackPath): { broadcast: string; key: string } {
  let found = names.get(path);
  if (!found) {
    const broadcast = path.broadcast.join("/");
    found = { broadcast, key: `${broadcast}/${path.track}` };
    names.set(path, found);
  }
  return found;
}

/** The broadcast path as subscribers see it, without a leading slash: `room/1`. */
export function broadcastName(path: TrackPath): string {
  return namesOf(path).broadcast;
}

/** A stable key for maps and logs: `room/1/chat`. */
export function trackKey(path: TrackPath): string {
  return namesOf(path).key;
}
