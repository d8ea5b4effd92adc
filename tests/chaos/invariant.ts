// The one invariant of a chaos run, checked once everything has healed:
// every acknowledged record is in history exactly once, at its acknowledged
// position, on every funnel; every subscriber that kept up received it; a
// subscriber may skip only what its client reports as a gap. The wait before
// the check ends on the same terms (allDelivered).
import { parseGroupId } from "../../src/ledger/mod.ts";
import type { FeedRecord } from "../../src/client/mod.ts";
import type { RawSubscriber } from "./observers.ts";
import type { Acked, StreamAcked } from "./workload.ts";

/** A record as a funnel's history answers it. */
export interface HistoryRecord {
  readonly group: string;
  readonly payload?: unknown;
}

/** What the check looked at. */
export interface Evidence {
  readonly acked: readonly Acked[];
  readonly streamAcked: readonly StreamAcked[];
  /** Histories of the records' track, one per funnel. */
  readonly histories: readonly (readonly HistoryRecord[])[];
  /** Histories of the stream's track, one per funnel (empty without a stream). */
  readonly streamHistories: readonly (readonly HistoryRecord[])[];
  readonly raw: readonly RawSubscriber[];
  readonly feed: { records: readonly FeedRecord[]; gaps: readonly { from: string; to: string }[] };
  /** Messages the Durable Streams reader got (JSON texts), or undefined without a stream. */
  readonly streamRead: readonly string[] | undefined;
  readonly crashes: readonly string[];
}

/** One way the invariant failed. */
export interface Violation {
  /** What was wrong, e.g. "raw subscriber missed records". */
  readonly what: string;
  /** How many records it concerns. */
  readonly count: number;
  /** A few of them, for the report. */
  readonly sample: string;
}

/** Counts that describe a run whether or not it failed. */
export interface Checked {
  readonly violations: Violation[];
  /** Acknowledged records (and appends) checked in history. */
  readonly records: number;
  /** Raw subscriptions judged (kept up to the end) and those that ended before (not judged). */
  readonly rawJudged: number;
  readonly rawEnded: number;
  /** Records delivered to raw subscribers that kept up, summed. */
  readonly rawDelivered: number;
  /** Gap events the client feed reported, and the records they covered. */
  readonly feedGaps: number;
  readonly feedGapRecords: number;
}

const canonical = (text: string): string => JSON.stringify(JSON.parse(text));
const canonicalValue = (value: unknown): string => JSON.stringify(value);
/** The payload of a record's frame as canonical JSON, or a marker when the frame is no record. */
function payloadOf(frame: string): string {
  try {
    return canonicalValue((JSON.parse(frame) as { payload?: unknown }).payload);
  } catch {
    return `not a record frame: ${frame.slice(0, 40)}`;
  }
}

/**
 * The keys of acknowledged appends the Durable Streams reader has not read.
 * Judged by key, never by count: an append the funnel committed but could not
 * answer (SIGKILLed first) is read without being acknowledged.
 */
export function unreadAppends(
  read: readonly string[],
  acked: readonly StreamAcked[],
): string[] {
  const keys = new Set(read.map((m) => (JSON.parse(m) as { k?: string }).k));
  return acked.filter((s) => !keys.has(s.key)).map((s) => s.key);
}

/** What the wait before the check looks at: the acknowledgements and what arrived so far. */
export type Arrived = Pick<Evidence, "acked" | "streamAcked" | "raw" | "feed" | "streamRead">;

/**
 * Whether every subscriber has everything acknowledged, so the wait before the
 * check may end: the client feed every record, the Durable Streams reader every
 * append, and each raw subscription open now every record after its first.
 */
export function allDelivered(a: Arrived): boolean {
  const keys = new Set(a.feed.records.map((r) => (r.payload as { k?: string } | undefined)?.k));
  if (!a.acked.every((r) => keys.has(r.key))) return false;
  if (a.streamRead && unreadAppends(a.streamRead, a.streamAcked).length > 0) return false;
  return a.raw.every((r) => {
    const sub = r.current();
    if (!sub || sub.first === undefined) return true;
    return a.acked.every((rec) => rec.seq + 1 <= sub.first! || sub.got.has(rec.seq + 1));
  });
}

function sample(items: readonly (string | number)[]): string {
  const head = items.slice(0, 8).join(", ");
  return items.length > 8 ? `${head}, … (${items.length})` : head;
}

/** Checks the invariant on `e`. */
export function checkInvariant(evidence: Evidence): Checked {
  // In position order, so the samples a report prints are the first ones missed.
  const e = { ...evidence, acked: [...evidence.acked].sort((a, b) => a.seq - b.seq) };
  const violations: Violation[] = [];
  const fail = (what: string, items: readonly (string | number)[]): void => {
    if (items.length > 0) violations.push({ what, count: items.length, sample: sample(items) });
  };
  for (const crash of e.crashes) fail("a process exited by itself", [crash]);

  // History, on every funnel: each acknowledged key once, at its group, with its body.
  const byKey = (records: readonly HistoryRecord[]) => {
    const m = new Map<string, HistoryRecord[]>();
    for (const r of records) {
      const k = (r.payload as { k?: unknown } | undefined)?.k;
      if (typeof k !== "string") continue;
      m.set(k, [...(m.get(k) ?? []), r]);
    }
    return m;
  };
  const historyCheck = (
    label: string,
    histories: readonly (readonly HistoryRecord[])[],
    acks: readonly { key: string; body: string; group: string }[],
  ): void => {
    histories.forEach((history, f) => {
      const at = byKey(history);
      const missing: string[] = [];
      const twice: string[] = [];
      const moved: string[] = [];
      for (const a of acks) {
        const found = at.get(a.key) ?? [];
        if (found.length === 0) missing.push(`${a.key}@${a.group}`);
        else if (found.length > 1) twice.push(a.key);
        else if (found[0]!.group !== a.group) {
          moved.push(`${a.key} acked ${a.group}, at ${found[0]!.group}`);
        } else if (canonicalValue(found[0]!.payload) !== canonical(a.body)) {
          moved.push(`${a.key} changed`);
        }
      }
      fail(`${label}: acknowledged but not in funnel-${f}'s history`, missing);
      fail(`${label}: in funnel-${f}'s history more than once`, twice);
      fail(`${label}: in funnel-${f}'s history at another position or with other content`, moved);
    });
  };
  historyCheck("record", e.histories, e.acked);
  historyCheck(
    "stream append",
    e.streamHistories,
    e.streamAcked.map((s) => ({
      key: s.key,
      body: s.body,
      group: `e000001-g${String(s.position - 1).padStart(8, "0")}`,
    })),
  );

  // Raw subscribers: a subscription that stayed open to the end got every record after its first.
  let rawJudged = 0;
  let rawEnded = 0;
  let rawDelivered = 0;
  for (const r of e.raw) {
    for (const sub of r.subscriptions) {
      if (sub.ended !== undefined || sub.first === undefined) {
        rawEnded++;
        continue;
      }
      rawJudged++;
      const missing: string[] = [];
      const wrong: string[] = [];
      for (const a of e.acked) {
        const sequence = a.seq + 1;
        if (sequence <= sub.first) continue;
        const text = sub.got.get(sequence);
        if (text === undefined) missing.push(`${a.key}@${sequence}`);
        else if (payloadOf(text) !== canonical(a.body)) {
          wrong.push(`${a.key}@${sequence}`);
        } else rawDelivered++;
      }
      fail(
        `raw @moq/net subscriber ${r.name} (kept up from group ${sub.first}) missed acknowledged records`,
        missing,
      );
      fail(
        `raw @moq/net subscriber ${r.name} got another record at an acknowledged position`,
        wrong,
      );
      fail(
        `raw @moq/net subscriber ${r.name} got groups twice`,
        sub.duplicates > 0 ? [sub.duplicates] : [],
      );
    }
  }

  // The client feed: everything, once, in order, except what a gap event reported.
  const inGap = (group: string): boolean => {
    const { epoch, seq } = parseGroupId(group);
    return e.feed.gaps.some((g) => {
      const from = parseGroupId(g.from);
      const to = parseGroupId(g.to);
      return from.epoch === epoch && to.epoch === epoch && from.seq <= seq && seq <= to.seq;
    });
  };
  let feedGapRecords = 0;
  const feedAt = new Map<string, FeedRecord[]>();
  for (const r of e.feed.records) {
    const k = (r.payload as { k?: unknown } | undefined)?.k;
    if (typeof k === "string") feedAt.set(k, [...(feedAt.get(k) ?? []), r]);
  }
  const feedMissing: string[] = [];
  const feedWrong: string[] = [];
  for (const a of e.acked) {
    const got = feedAt.get(a.key) ?? [];
    if (got.length === 0) {
      if (inGap(a.group)) feedGapRecords++;
      else feedMissing.push(`${a.key}@${a.group}`);
    } else if (got.length > 1) feedWrong.push(`${a.key} twice`);
    else if (got[0]!.group !== a.group) {
      feedWrong.push(`${a.key} acked ${a.group}, fed ${got[0]!.group}`);
    }
  }
  fail("client feed missed acknowledged records without a gap event", feedMissing);
  fail("client feed delivered a record twice or at another position", feedWrong);
  const order = e.feed.records.map((r) => parseGroupId(r.group).seq);
  const disorder = order.filter((s, i) => i > 0 && s <= order[i - 1]!);
  fail("client feed out of order", disorder);

  // The Durable Streams reader: every acknowledged append once, in position order.
  if (e.streamRead) {
    const seen = new Map<string, number>();
    e.streamRead.forEach((m, i) => {
      const k = (JSON.parse(m) as { k?: string }).k;
      if (k !== undefined) seen.set(k, seen.has(k) ? -1 : i);
    });
    const missing = unreadAppends(e.streamRead, e.streamAcked);
    const twice = e.streamAcked.filter((s) => seen.get(s.key) === -1).map((s) => s.key);
    const sorted = [...e.streamAcked].sort((a, b) => a.position - b.position);
    const idx = sorted.map((s) => seen.get(s.key) ?? -1).filter((i) => i >= 0);
    const disorder = idx.filter((v, i) => i > 0 && v < idx[i - 1]!);
    fail("Durable Streams reader missed acknowledged appends", missing);
    fail("Durable Streams reader got an append twice", twice);
    fail("Durable Streams reader got appends out of order", disorder);
  }
  return {
    violations,
    records: e.acked.length + e.streamAcked.length,
    rawJudged,
    rawEnded,
    rawDelivered,
    feedGaps: e.feed.gaps.length,
    feedGapRecords,
  };
}
