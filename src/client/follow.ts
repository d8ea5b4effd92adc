/**
 * Following a track over HTTP while no MoQ subscription is up: one parked
 * long-poll request (the funnel's Durable Streams read of the same track)
 * that answers when the track's next record is committed, instead of
 * reading the history on a timer. The records themselves are then read
 * from the history (`/tracks/`), which carries their groups, senders and
 * redactions; the long-poll's body is not read.
 */
import { HttpError } from "./errors.ts";
import { type HttpContext, request } from "./http.ts";

/** How long a long-poll may stay parked before it is abandoned, ms (the funnel answers within 20 s). */
export const LONG_POLL_TIMEOUT_MS = 30_000;

/**
 * What a long-poll said: `committed` (records after the position exist),
 * `quiet` (none came while it waited: ask again), or `unavailable` (no
 * stream read of this track here: the track does not exist yet, its stream
 * is closed, or the funnel predates Durable Streams; read the history on a
 * timer instead).
 */
export type FollowAnswer = "committed" | "quiet" | "unavailable";

/** The funnel's Durable Streams URL of a `/tracks/` URL: the same path under `/v1/stream/`. */
export function streamUrlOf(track: URL): URL {
  const url = new URL(track);
  const at = url.pathname.indexOf("/tracks/");
  url.pathname = `${url.pathname.slice(0, at)}/v1/stream/${url.pathname.slice(at + 8)}`;
  return url;
}

/** The stream offset just after ledger record `seq` of `epoch` (-1: before the first). */
function offsetAfter(epoch: number, seq: number): string {
  if (seq < 0) return "-1";
  const pad = (n: number) => String(n).padStart(16, "0");
  return `${pad(epoch)}_${pad(seq + 1)}`; // a stream position is the MoQ group sequence
}

/**
 * Parks one long-poll on `stream` for the records after ledger record `seq`
 * of `epoch`. Throws what {@linkcode request} throws, except a 404.
 */
export async function waitForCommit(
  ctx: HttpContext,
  stream: URL,
  epoch: number,
  seq: number,
): Promise<FollowAnswer> {
  // The stream protocol knows only the ledger's first epoch.
  if (epoch > 1) return "unavailable";
  const url = new URL(stream);
  url.searchParams.set("offset", offsetAfter(epoch, seq));
  url.searchParams.set("live", "long-poll");
  let response: Response;
  try {
    response = await request(ctx, url, { method: "GET", timeoutMs: LONG_POLL_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return "unavailable";
    throw err;
  }
  await response.body?.cancel();
  if (response.status !== 204) return "committed";
  // A closed stream answers at once, every time; only a redaction can still come.
  return response.headers.get("stream-closed") === "true" ? "unavailable" : "quiet";
}
