/** Older records on demand: "load older" pages of a track's history. */
import { HttpError } from "./errors.ts";
import { type HttpContext, MAX_PAGE, readPage } from "./http.ts";
import type { FeedRecord } from "./record.ts";
import { tokenKeeperFor, type TokenSource } from "./token.ts";
import { parseTrackUrl } from "./track_url.ts";

/** Options of {@linkcode history}. */
export interface HistoryOptions {
  /** Records older than this group (a record's `group`, or a page's `before`); default the newest. */
  readonly before?: string;
  /** Records at most (1 to 200, default 50). */
  readonly limit?: number;
  /** Bearer token, or a function returning a fresh one. */
  readonly token?: TokenSource;
  /** Abandons the request. */
  readonly signal?: AbortSignal;
  /** The fetch to use (default the global one). */
  readonly fetch?: typeof fetch;
}

/** One page of older records. */
export interface HistoryPage {
  /** The records, oldest first. */
  readonly records: FeedRecord[];
  /** Pass as `before` for the next older page; absent at the track's first record. */
  readonly before?: string;
}

/**
 * Reads one page of records older than `before` (default: the newest
 * records), oldest first: the "load older" of a chat. A track that does not
 * exist yet has no records.
 *
 * @example
 * ```ts
 * import { history } from "@sluice/sluice/client";
 *
 * const track = "http://localhost:8090/tracks/room/1/chat";
 * const page = await history(track, { before: oldestShown, limit: 50 });
 * showAbove(page.records); // and keep page.before for the next "load older"
 * ```
 */
export async function history(
  track: string | URL,
  options: HistoryOptions = {},
): Promise<HistoryPage> {
  const url = parseTrackUrl(track).url;
  const limit = options.limit ?? 50;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new RangeError(`Cannot read "${limit}" records a page: use 1 to ${MAX_PAGE}`);
  }
  const ctx: HttpContext = {
    tokens: tokenKeeperFor(options.token),
    signal: options.signal,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const query: Record<string, string> = { limit: String(limit) };
  if (options.before !== undefined) query.before = options.before;
  try {
    const page = await readPage(ctx, url, query);
    return {
      records: page.records.map((p) => p.record),
      ...(page.before === undefined ? {} : { before: page.before }),
    };
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return { records: [] };
    throw err;
  }
}
