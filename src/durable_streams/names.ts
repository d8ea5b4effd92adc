import { parseTrackPath, trackKey, type TrackPath } from "../path/mod.ts";

/** Where streams live on the funnel's HTTP port: `/v1/stream/<name>`. */
export const STREAMS_PREFIX = "/v1/stream/";

/** The track a one-segment stream name gets within the broadcast of that name. */
export const SINGLE_NAME_TRACK = "stream";

/**
 * The ledger track of a stream name (the raw, percent-encoded text after
 * `/v1/stream/`): `<broadcast path>/<track>` exactly as under `/tracks/`,
 * and a one-segment name `<name>` as broadcast `<name>`, track `stream`.
 * Throws `SyntaxError` with a client-readable reason.
 *
 * @example
 * ```ts
 * streamTrack("room/1/chat"); // { broadcast: ["room", "1"], track: "chat" }
 * streamTrack("orders");      // { broadcast: ["orders"], track: "stream" }
 * ```
 */
export function streamTrack(rawName: string): TrackPath {
  const raw = rawName.includes("/") ? rawName : `${rawName}/${SINGLE_NAME_TRACK}`;
  return parseTrackPath(raw);
}

/**
 * The stream name, without the prefix, of a `Stream-Forked-From` value (a
 * path or a URL). Throws `SyntaxError` for a URL that does not parse.
 */
export function forkSourceName(value: string): string {
  let path = value.trim();
  if (/^https?:\/\//i.test(path)) {
    try {
      path = new URL(path).pathname;
    } catch {
      throw new SyntaxError(`Stream-Forked-From is not a valid URL: "${value.slice(0, 200)}"`);
    }
  }
  const at = path.indexOf(STREAMS_PREFIX);
  if (at >= 0) return path.slice(at + STREAMS_PREFIX.length);
  return path.replace(/^\/+/, "");
}

/** A stable key for a stream's track: the track key (`room/1/chat`, `orders/stream`). */
export function streamKey(path: TrackPath): string {
  return trackKey(path);
}
