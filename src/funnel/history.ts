import { entryGroup, type LedgerEntry } from "../ledger/mod.ts";

/** Default and largest history page sizes (spec). */
export const DEFAULT_PAGE_LIMIT = 50;
/** Largest `limit` accepted. */
export const MAX_PAGE_LIMIT = 200;

/**
 * Renders one history entry as JSON text. Built by hand because wallclock
 * is a bigint that must not pass through a float, and the payload is the
 * stored JSON text inserted verbatim.
 */
export function historyEntryJson(entry: LedgerEntry): string {
  const parts = [`"group":"${entryGroup(entry)}"`, `"wallclock":${entry.wallclock}`];
  if (entry.redacted) {
    parts.push(`"redacted":true`);
  } else {
    if (entry.sender !== undefined) parts.push(`"sender":${JSON.stringify(entry.sender)}`);
    if (entry.redacts !== undefined) parts.push(`"redacts":${JSON.stringify(entry.redacts)}`);
    if (entry.payload !== undefined) parts.push(`"payload":${entry.payload}`);
  }
  return `{${parts.join(",")}}`;
}

/**
 * Renders a history page from entries read newest first: records oldest
 * first, and `before` (the oldest group of the page) only when an older
 * page may exist.
 */
export function historyPageJson(newestFirst: readonly LedgerEntry[]): string {
  const records = [...newestFirst].reverse();
  const oldest = records[0];
  const before = oldest && oldest.seq > 0 ? `,"before":"${entryGroup(oldest)}"` : "";
  return `{"records":[${records.map(historyEntryJson).join(",")}]${before}}`;
}

/** The POST / DELETE 201 body: `{"group":..,"wallclock":..}`. */
export function committedJson(group: string, wallclock: bigint): string {
  return `{"group":"${group}","wallclock":${wallclock}}`;
}
