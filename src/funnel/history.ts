import { entryGroup, type LedgerEntry } from "../ledger/mod.ts";

/** Default and largest history page sizes (spec). */
export const DEFAULT_PAGE_LIMIT = 50;
/** Largest `limit` accepted. */
export const MAX_PAGE_LIMIT = 200;

/**
 * Renders one history entry as JSON text. Built by hand because wallclock
 * is a bigint that must not pass through a float, and the payload is the
 * stored JSON text inserted verbatim. A byte payload is shown as `"bytes"`
 * (base64) and protocol metadata as `"meta"`, as live frames carry them.
 */
export function historyEntryJson(entry: LedgerEntry): string {
  const parts = [`"group":"${entryGroup(entry)}"`, `"wallclock":${entry.wallclock}`];
  if (entry.redacted) {
    parts.push(`"redacted":true`);
  } else {
    if (entry.sender !== undefined) parts.push(`"sender":${JSON.stringify(entry.sender)}`);
    if (entry.redacts !== undefined) parts.push(`"redacts":${JSON.stringify(entry.redacts)}`);
    if (entry.payload !== undefined) parts.push(`"payload":${entry.payload}`);
    else if (entry.bytes !== undefined) parts.push(`"bytes":"${entry.bytes.toBase64()}"`);
  }
  if (entry.meta !== undefined) parts.push(`"meta":${entry.meta}`);
  return `{${parts.join(",")}}`;
}

/**
 * The body of a page going back in time (no cursor, or `before`): entries
 * read newest first (at most one page, held to reverse it), written as
 * records oldest first, with `before` (the oldest group of the page) only
 * when an older page may exist.
 */
export async function* olderPageBody(
  newestFirst: AsyncIterable<LedgerEntry>,
): AsyncGenerator<string> {
  const records = (await Array.fromAsync(newestFirst)).reverse();
  const oldest = records[0];
  const before = oldest && oldest.seq > 0 ? `,"before":"${entryGroup(oldest)}"` : "";
  yield `{"records":[${records.map(historyEntryJson).join(",")}]${before}}`;
}

/**
 * The body of a page going forward (`after`), streamed as the entries are
 * read oldest first, with `after` (the newest group of the page) only when
 * `newerExists` says records newer than it were committed.
 */
export async function* newerPageBody(
  oldestFirst: AsyncIterable<LedgerEntry> | Iterable<LedgerEntry>,
  newerExists: (newest: LedgerEntry) => boolean,
): AsyncGenerator<string> {
  // The opening travels with the first record, so the first chunk is the first read.
  let separator = `{"records":[`;
  let newest: LedgerEntry | undefined;
  for await (const entry of oldestFirst) {
    yield separator + historyEntryJson(entry);
    separator = ",";
    newest = entry;
  }
  const after = newest && newerExists(newest) ? `,"after":"${entryGroup(newest)}"` : "";
  yield `${newest ? "" : separator}]${after}}`;
}

/** The POST / DELETE 201 body: `{"group":..,"wallclock":..}`. */
export function committedJson(group: string, wallclock: bigint): string {
  return `{"group":"${group}","wallclock":${wallclock}}`;
}
