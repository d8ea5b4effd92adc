import { entryGroup, type LedgerEntry, LedgerError } from "../ledger/mod.ts";

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
 * when an older page may exist: its oldest record is above `first`.
 */
export async function* olderPageBody(
  newestFirst: AsyncIterable<LedgerEntry>,
  first = 0,
): AsyncGenerator<string> {
  const records = (await Array.fromAsync(newestFirst)).reverse();
  const oldest = records[0];
  // Below the track's first available record (`first`, after retention) nothing is older.
  const before = oldest && oldest.seq > first ? `,"before":"${entryGroup(oldest)}"` : "";
  yield `{"records":[${records.map(historyEntryJson).join(",")}]${before}}`;
}

/**
 * The body of a page going forward (`after`), streamed as the entries are
 * read oldest first. `oldestFirst` reads up to `limit + 1` entries after
 * sequence `from` (-1: from the first): the one past the page is not sent,
 * it only says the page gets an `after` cursor (its newest group). So the
 * cursor comes from storage itself, never from a newest entry held in memory,
 * which on a shared ledger lags behind other processes' commits.
 *
 * A page that storage ends short of `committed` (the newest sequence this
 * process knew committed before the read began, so durable by then) would
 * tell the reader "that is all" while records are missing: it fails instead, as `LedgerError("unavailable")` (503 when
 * nothing was sent yet; a cut-off body otherwise), so the reader retries.
 */
export async function* newerPageBody(
  oldestFirst: AsyncIterable<LedgerEntry> | Iterable<LedgerEntry>,
  limit: number,
  from: number,
  committed: number,
): AsyncGenerator<string> {
  // The opening travels with the first record, so the first chunk is the first read.
  let separator = `{"records":[`;
  let newest: LedgerEntry | undefined;
  let more = false;
  let count = 0;
  for await (const entry of oldestFirst) {
    if (count === limit) {
      more = true;
      break;
    }
    yield separator + historyEntryJson(entry);
    separator = ",";
    newest = entry;
    count++;
  }
  const last = newest?.seq ?? from;
  if (!more && last < committed) {
    throw new LedgerError(
      "unavailable",
      `The ledger ended a page at sequence ${last} but holds records up to ${committed}`,
    );
  }
  const after = newest && more ? `,"after":"${entryGroup(newest)}"` : "";
  yield `${newest ? "" : separator}]${after}}`;
}

/** The POST / DELETE 201 body: `{"group":..,"wallclock":..}`. */
export function committedJson(group: string, wallclock: bigint): string {
  return `{"group":"${group}","wallclock":${wallclock}}`;
}
