/**
 * The sluice client for application developers, in browsers (bundled) and
 * in Deno: {@linkcode openFeed} reads a track's records in commit order,
 * from any point in its history and then live, with no gap and no
 * duplicate across reconnects and skips; {@linkcode history} reads older
 * pages; {@linkcode post} and {@linkcode redact} write, retried safely.
 * Feeds to the same server share one MoQ session.
 *
 * In a browser, `https://` MoQ URLs use the browser's WebTransport. In
 * Deno, `https://` uses sluice's own WebTransport client and `moqt://`
 * native QUIC (run with `--unstable-net`); those are loaded on demand, so a
 * browser bundle does not need them.
 *
 * @example
 * ```ts
 * import { openFeed, post } from "@sluice/sluice/client";
 *
 * const track = "http://localhost:8090/tracks/room/1/chat";
 * const feed = openFeed({ track, moq: "https://localhost:4433/", from: { last: 50 } });
 * await post(track, { text: "hello" });
 * for await (const record of feed) console.log(record.group, record.payload);
 * ```
 *
 * @module
 */
export { Feed } from "./feed.ts";
export { openFeed } from "./open_feed.ts";
export type { FeedOptions } from "./feed_options.ts";
export {
  FeedErrorEvent,
  type FeedErrorReason,
  FeedGapEvent,
  type FeedState,
  FeedStateEvent,
} from "./events.ts";
export { type FeedStart } from "./start.ts";
export { type FeedRecord } from "./record.ts";
export { history, type HistoryOptions, type HistoryPage } from "./history.ts";
export { HttpError, NetworkError, type RefusalReason, RefusedError, TokenError } from "./errors.ts";
export { TOKEN_ATTEMPTS, type TokenSource } from "./token.ts";
export {
  type ProbeTrack,
  type SessionLease,
  SessionPool,
  type SessionTarget,
  SharedSession,
  sharedSessions,
} from "./session_pool.ts";
export { type Committed, post, type PostOptions, redact } from "./post.ts";
export type { CertificateHash, Dialer, DialOptions } from "./dial.ts";
export { parseTrackUrl, type TrackAddress } from "./track_url.ts";
