import { Feed } from "./feed.ts";
import type { FeedOptions } from "./feed_options.ts";

/**
 * Opens a feed of a track's records. Iterate it with `for await`; it
 * reconnects by itself and ends only when closed, or on a failure the
 * application must act on (a refused credential, a token function that
 * keeps failing), which the iteration then throws and an `error` event
 * ({@linkcode FeedErrorEvent}) reports.
 *
 * @example
 * ```ts
 * import { openFeed } from "@sluice/sluice/client";
 *
 * const feed = openFeed({
 *   track: "http://localhost:8090/tracks/room/1/chat",
 *   moq: "https://localhost:4433/",
 *   from: { last: 50 },
 * });
 * feed.addEventListener("statechange", () => console.log("feed is", feed.state));
 * for await (const record of feed) {
 *   if (record.redacts) console.log("removed", record.redacts);
 *   else console.log(record.group, record.sender, record.payload);
 * }
 * ```
 */
export function openFeed(options: FeedOptions): Feed {
  return new Feed(options);
}
