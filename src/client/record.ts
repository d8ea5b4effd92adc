/** The records a feed yields, read from history pages and from live frames. */
import { formatGroupId, parseGroupId } from "../record/mod.ts";

/**
 * One record of a track, in commit order. A normal record has `payload`; a
 * redaction has `redacts` (the group it removed); a record whose payload was
 * removed before the feed read it has `redacted: true` and neither.
 */
export interface FeedRecord {
  /** The ledger group id, e.g. "e000001-g00000041"; group ids sort in commit order. */
  readonly group: string;
  /** The posting credential's `sub`, when it had one. */
  readonly sender?: string;
  /** The posted JSON value (absent for redactions and redacted records). */
  readonly payload?: unknown;
  /** For a redaction: the group whose payload it removed. */
  readonly redacts?: string;
  /** True when the record's payload was removed by a redaction committed before it was read. */
  readonly redacted?: true;
  /** Commit time in Unix nanoseconds, when known (always from history; live when the frame carries it). */
  readonly wallclock?: bigint;
}

/** A record with its position: the ledger sequence within its epoch. */
export interface Positioned {
  /** Ledger epoch of the group. */
  readonly epoch: number;
  /** Ledger sequence of the group. */
  readonly seq: number;
  /** The record. */
  readonly record: FeedRecord;
}

/** A history page as the funnel answers it. */
export interface HistoryPage {
  /** Records, oldest first. */
  readonly records: Positioned[];
  /** Cursor for the next older page, when one may exist. */
  readonly before?: string;
  /** Cursor for the next newer page, when one may exist (forward paging). */
  readonly after?: string;
}

type Reviver = (
  this: unknown,
  key: string,
  value: unknown,
  context?: { source?: string },
) => unknown;

/**
 * Parses JSON whose objects may carry an integer `wallclock` wider than a
 * double: the exact digits are kept per object (engines with JSON.parse
 * source text access: Deno, Chromium 114+, Firefox 135+; elsewhere the
 * value is rounded to the nearest double).
 */
export function parseWithWallclocks(
  text: string,
): { value: unknown; exact: WeakMap<object, string> } {
  const exact = new WeakMap<object, string>();
  const reviver: Reviver = function (key, value, context) {
    if (key === "wallclock" && typeof value === "number" && context?.source !== undefined) {
      exact.set(this as object, context.source);
    }
    return value;
  };
  return { value: JSON.parse(text, reviver as (key: string, value: unknown) => unknown), exact };
}

function wallclockOf(entry: Record<string, unknown>, exact: WeakMap<object, string>): bigint {
  const digits = exact.get(entry);
  if (digits !== undefined && /^\d+$/.test(digits)) return BigInt(digits);
  const n = entry.wallclock;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw new SyntaxError(`Cannot read wallclock "${String(n)}": not a non-negative integer`);
  }
  return BigInt(Math.round(n));
}

/** Reads a history entry (`{"group","wallclock","sender"?,"payload"|"redacts"|"redacted"}`). */
function entryOf(entry: unknown, exact: WeakMap<object, string>): Positioned {
  if (
    typeof entry !== "object" || entry === null ||
    typeof (entry as { group?: unknown }).group !== "string"
  ) {
    throw new SyntaxError("Cannot read history entry: no group");
  }
  const e = entry as Record<string, unknown>;
  const group = e.group as string;
  const { epoch, seq } = parseGroupId(group);
  const record: {
    group: string;
    wallclock: bigint;
    sender?: string;
    payload?: unknown;
    redacts?: string;
    redacted?: true;
  } = { group, wallclock: wallclockOf(e, exact) };
  if (e.redacted === true) record.redacted = true;
  else {
    if (typeof e.sender === "string") record.sender = e.sender;
    if (typeof e.redacts === "string") record.redacts = e.redacts;
    else if ("payload" in e) record.payload = e.payload;
  }
  return { epoch, seq, record };
}

/** Parses a history page's JSON text. Throws SyntaxError when it is not one. */
export function parseHistoryPage(text: string): HistoryPage {
  const { value, exact } = parseWithWallclocks(text);
  const page = value as { records?: unknown; before?: unknown; after?: unknown };
  if (typeof page !== "object" || page === null || !Array.isArray(page.records)) {
    throw new SyntaxError("Cannot read history page: no records array");
  }
  return {
    records: page.records.map((e) => entryOf(e, exact)),
    ...(typeof page.before === "string" ? { before: page.before } : {}),
    ...(typeof page.after === "string" ? { after: page.after } : {}),
  };
}

/** Parses a POST/DELETE answer `{"group","wallclock"}` with the exact wallclock. */
export function parseCommitted(text: string): { group: string; wallclock: bigint } {
  const { value, exact } = parseWithWallclocks(text);
  const v = value as Record<string, unknown>;
  if (typeof v !== "object" || v === null || typeof v.group !== "string") {
    throw new SyntaxError("Cannot read the funnel's answer: no group");
  }
  return { group: v.group, wallclock: wallclockOf(v, exact) };
}

const decoder = new TextDecoder();

/**
 * Reads a live or fetched frame (`{"sender"?,"payload"}`,
 * `{"sender"?,"redacts"}`, or `{"redacted":true}` for a redacted record)
 * as the record of group `seq` in `epoch`. Throws SyntaxError for a frame
 * that is not one.
 */
export function recordFromFrame(
  epoch: number,
  seq: number,
  frame: Uint8Array,
  wallclock: bigint | undefined,
): Positioned {
  const v = JSON.parse(decoder.decode(frame)) as Record<string, unknown>;
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new SyntaxError("Cannot read frame: not a JSON object");
  }
  const record: {
    group: string;
    sender?: string;
    payload?: unknown;
    redacts?: string;
    redacted?: true;
    wallclock?: bigint;
  } = { group: formatGroupId({ epoch, seq }) };
  // A redacted record (as FETCH and a restored track's newest answer it) keeps no sender.
  if (v.redacted === true) record.redacted = true;
  else {
    if (typeof v.sender === "string") record.sender = v.sender;
    if (typeof v.redacts === "string") record.redacts = v.redacts;
    else if ("payload" in v) record.payload = v.payload;
    else throw new SyntaxError("Cannot read frame: neither payload, redacts nor redacted");
  }
  if (wallclock !== undefined) record.wallclock = wallclock;
  return { epoch, seq, record };
}
