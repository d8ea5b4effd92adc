/** A funnel track URL and the MoQ names it stands for, and the MoQ URL a feed dials. */
import { MOQ_SCHEMES } from "./dial.ts";

/** Where a track lives: its HTTP URL, and its broadcast path and name for subscribers. */
export interface TrackAddress {
  /** The track's HTTP URL (`…/tracks/<broadcast path>/<track>`), without query or fragment. */
  readonly url: URL;
  /** The broadcast path subscribers use, e.g. "room/1". */
  readonly broadcast: string;
  /** The track name, e.g. "chat". */
  readonly name: string;
}

const MARKER = "/tracks/";

/**
 * Reads a funnel track URL such as `http://localhost:8090/tracks/room/1/chat`
 * (the funnel may sit under a base path: the part after the first
 * `/tracks/` names the track). Throws TypeError for any other URL.
 *
 * @example
 * ```ts
 * parseTrackUrl("http://localhost:8090/tracks/room/1/chat"); // broadcast "room/1", name "chat"
 * ```
 */
export function parseTrackUrl(track: string | URL): TrackAddress {
  let url: URL;
  try {
    url = new URL(track);
  } catch {
    throw new TypeError(`Cannot use track URL "${track}": not an absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Cannot use track URL "${url.href}": the scheme must be http or https`);
  }
  const at = url.pathname.indexOf(MARKER);
  const segments = at < 0 ? [] : url.pathname.slice(at + MARKER.length).split("/");
  if (segments.length < 2 || segments.some((s) => s === "")) {
    throw new TypeError(
      `Cannot use track URL "${url.href}": expected …/tracks/<broadcast path>/<track>`,
    );
  }
  let decoded: string[];
  try {
    decoded = segments.map(decodeURIComponent);
  } catch {
    throw new TypeError(`Cannot use track URL "${url.href}": bad percent-encoding`);
  }
  url.search = "";
  url.hash = "";
  return { url, broadcast: decoded.slice(0, -1).join("/"), name: decoded.at(-1)! };
}

/** Reads a feed's MoQ URL; throws TypeError for one no dialer takes. */
export function parseMoqUrl(moq: string | URL): URL {
  let url: URL;
  try {
    url = new URL(moq);
  } catch {
    throw new TypeError(`Cannot use MoQ URL "${moq}": not an absolute URL`);
  }
  if (!MOQ_SCHEMES.includes(url.protocol)) {
    throw new TypeError(
      `Cannot use MoQ URL "${url.href}": the scheme must be https, wss, ws (loopback) or moqt`,
    );
  }
  return url;
}
