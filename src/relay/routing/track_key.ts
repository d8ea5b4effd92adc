import { codec } from "../../moq/mod.ts";

declare const trackKeyBrand: unique symbol;

/**
 * One track of one broadcast as a map key: the relay's pending work per
 * track (its distributor, an upstream SUBSCRIBE or TRACK in flight) is
 * keyed by it. Made only by {@linkcode trackKey}, so a key is never a bare
 * string put together some other way.
 */
export type TrackKey = string & { readonly [trackKeyBrand]: true };

/**
 * The key of `track` of broadcast `path`. The path's length leads, so no
 * two (path, track) pairs share a key whatever characters they hold. A path
 * or track name longer than the wire allows (the moq codec's `MAX_NAME`
 * bytes) is a RangeError: no session can name it, and a key stays bounded.
 */
export function trackKey(path: string, track: string): TrackKey {
  checkLength("Broadcast path", path);
  checkLength("Track name", track);
  return `${path.length}:${path}${track}` as TrackKey;
}

const encoder = new TextEncoder();

function checkLength(what: string, name: string): void {
  // A string's UTF-8 form is 1 to 3 bytes per UTF-16 unit: encode only when it may be too long.
  if (name.length * 3 <= codec.MAX_NAME) return;
  if (name.length > codec.MAX_NAME || encoder.encode(name).length > codec.MAX_NAME) {
    throw new RangeError(`${what} is longer than ${codec.MAX_NAME} bytes`);
  }
}
