/** Where a feed begins: its start option turned into a position in the ledger. */
import { formatGroupId, parseGroupId } from "../record/mod.ts";
import { HttpError } from "./errors.ts";
import { type HttpContext, MAX_PAGE, readPage } from "./http.ts";

/**
 * Where a feed starts: `"latest"` (records committed from now on),
 * `"start"` (the whole track), `{ after: group }` (records after that group,
 * such as a saved `feed.position`), `{ last: n }` (the newest n records,
 * then everything new) or `{ time }` (the first record committed at or
 * after that moment: a `Date` or Unix milliseconds).
 */
export type FeedStart =
  | "latest"
  | "start"
  | { readonly after: string }
  | { readonly last: number }
  | { readonly time: Date | number };

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
    if ("time" in from) {
      const ms = from.time instanceof Date ? from.time.getTime() : from.time;
      if (!Number.isFinite(ms) || ms < 0) {
        throw new RangeError(`Cannot start at time "${String(from.time)}": not a moment`);
      }
      return from;
    }
  }
  throw new TypeError(
    `Cannot start from "${String(from)}": use "latest", "start", { after }, { last } or { time }`,
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
  if (typeof from === "object" && "time" in from) return await startAtTime(http, track, from.time);
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
  if (from === "latest" || from.last === 0) {
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

/**
 * The position before the first record of the newest epoch committed at or
 * after `time`: a binary search over sequences, one record per request
 * (about log2 of the track's length requests).
 */
async function startAtTime(
  http: HttpContext,
  track: URL,
  time: Date | number,
): Promise<StartPosition> {
  const ns = BigInt(Math.round(time instanceof Date ? time.getTime() : time)) * 1_000_000n;
  const at = async (query: Record<string, string>) => {
    try {
      return (await readPage(http, track, { ...query, limit: "1" })).records[0];
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return undefined;
      throw err;
    }
  };
  const newest = await at({});
  if (!newest) return { epoch: 1, seq: -1 };
  if ((newest.record.wallclock ?? 0n) < ns) return { epoch: newest.epoch, seq: newest.seq };
  // The first sequence whose record (or the nearest older one held) is at or after the time.
  let low = 0;
  let high = newest.seq;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const p = await at({ before: formatGroupId({ epoch: newest.epoch, seq: mid + 1 }) });
    if (p && (p.record.wallclock ?? 0n) >= ns) high = mid;
    else low = mid + 1;
  }
  return { epoch: newest.epoch, seq: low - 1 };
}
