import type { TrackBackend } from "./backend.ts";
import type { LedgerEntry } from "./entry.ts";

/**
 * Which of a track's entries a stream gives, and in which order: forward
 * (the default) gives those with `seq > after` (all when `after` is
 * undefined), oldest first; backward gives those with `seq < before` (all
 * when `before` is undefined), newest first. `limit` caps the count.
 */
export type EntryRange =
  | { readonly direction?: "forward"; readonly after?: number | undefined; readonly limit?: number }
  | {
    readonly direction: "backward";
    readonly before?: number | undefined;
    readonly limit?: number;
  };

/** Options of {@link entryStream}. */
export interface EntryStreamOptions {
  /**
   * Entries read from storage at a time (default 256). The stream holds at
   * most one page its reader has not taken yet.
   */
  readonly pageSize?: number;
}

/** Entries per storage read when the caller does not say. */
export const DEFAULT_ENTRY_PAGE = 256;

/**
 * A track's entries as a Web-standard `ReadableStream`, filled by paging the
 * backend only when its reader wants more (pull-based, high-water mark 0):
 * however long the track, it holds at most one page ahead of the reader.
 * A forward stream ends at the newest entry committed when its last page was
 * read; it does not wait for new ones. A storage failure errors the stream
 * with the backend's error (`LedgerError("unavailable")` when it is away).
 *
 * @example
 * ```ts
 * for await (const entry of entryStream(track.backend, { after: 41, limit: 1000 })) {
 *   console.log(entry.seq); // 42, 43, ...
 * }
 * ```
 */
export function entryStream(
  backend: TrackBackend,
  range: EntryRange = {},
  options: EntryStreamOptions = {},
): ReadableStream<LedgerEntry> {
  const pageSize = options.pageSize ?? DEFAULT_ENTRY_PAGE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) {
    throw new RangeError(`Cannot page the ledger by "${pageSize}" entries: must be at least 1`);
  }
  const limit = range.limit ?? Infinity;
  if (!(limit >= 0)) throw new RangeError(`Cannot read "${limit}" entries: must be at least 0`);
  const backward = range.direction === "backward";
  let cursor = backward ? range.before : range.after;
  let remaining = limit;
  return new ReadableStream<LedgerEntry>({
    async pull(controller): Promise<void> {
      const wanted = Math.min(pageSize, remaining);
      if (wanted <= 0 || (backward && cursor !== undefined && cursor <= 0)) {
        // Nothing more can come (a limit of 0, or a backward read starting at the first entry).
        controller.close();
        return;
      }
      const page = backward
        ? await backend.readBefore(cursor, wanted)
        : await backend.readAfter(cursor, wanted);
      for (const entry of page) controller.enqueue(entry);
      remaining -= page.length;
      const last = page[page.length - 1];
      if (last) cursor = last.seq;
      // A forward page is full up to the newest end of the track (a backend pages over the
      // positions compaction removed), so a short one is that end. A short
      // backward page may only have skipped a batch still being written: go on to seq 0.
      const ended = backward ? page.length === 0 || cursor === 0 : page.length < wanted;
      if (ended || remaining <= 0) controller.close();
    },
  }, { highWaterMark: 0 });
}
