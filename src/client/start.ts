/** Where a feed begins: its start option turned into a position in the ledger. */
import { parseGroupId } from "../record/mod.ts";
import { HttpError } from "./errors.ts";
import { type HttpContext, MAX_PAGE, readPage } from "./http.ts";

/**
 * Where a feed starts: `"latest"` (records committed from now on),
 * `"start"` (the whole track), `{ after: group }` (records after that group)
 * or `{ last: n }` (the newest n records, then everything new).
 */
export type FeedStart = "latest" | "start" | { readonly after: string } | {
  readonly last: number;
};

/** A ledger position: records after `seq` of `epoch` come next. */
export interface StartPosition {
  /** Ledger epoch. */
  readonly epoch: number;
  /** The sequence after which records are delivered (-1: from the first). */
  readonly seq: number;
}

/** Checks a start option before anything is sent; throws TypeError or RangeError. */
export function checkStart(from: FeedStart): FeedStart {
  if (from === "latest" || from === "start") return from;
  if (typeof from === "object" && from !== null) {
    if ("after" in from) {
      try {
        parseGroupId(from.after);
      } catch (err) {
        throw new TypeError(`Cannot start after "${from.after}": ${(err as Error).message}`);
      }
      return from;
    }
    if ("last" in from) {
      if (!Number.isSafeInteger(from.last) || from.last < 0) {
        throw new RangeError(`Cannot start at the last "${from.last}" records: not a count`);
      }
      return from;
    }
  }
  throw new TypeError(
    `Cannot start from "${String(from)}": use "latest", "start", { after } or { last }`,
  );
}

/**
 * Finds where `from` starts in the track's ledger, over HTTP. A track that
 * does not exist yet starts from its first record.
 */
export async function resolveStart(
  http: HttpContext,
  track: URL,
  from: FeedStart,
): Promise<StartPosition> {
  const FIRST = { epoch: 1, seq: -1 };
  if (from === "start") return FIRST;
  if (typeof from === "object" && "after" in from) return parseGroupId(from.after);
  const want = from === "latest" ? 1 : Math.max(from.last, 1);
  let page;
  try {
    page = await readPage(http, track, { limit: String(Math.min(want, MAX_PAGE)) });
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return FIRST;
    throw err;
  }
  const newest = page.records.at(-1);
  if (!newest) return FIRST;
  if (from === "latest" || (typeof from === "object" && "last" in from && from.last === 0)) {
    return { epoch: newest.epoch, seq: newest.seq };
  }
  let count = page.records.length;
  let oldest = page.records[0]!;
  while (count < want && page.before !== undefined) {
    page = await readPage(http, track, {
      before: page.before,
      limit: String(Math.min(want - count, MAX_PAGE)),
    });
    const first = page.records[0];
    if (!first) break;
    count += page.records.length;
    oldest = first;
  }
  return { epoch: oldest.epoch, seq: oldest.seq - 1 };
}
