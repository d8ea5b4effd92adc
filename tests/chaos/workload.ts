// The load of a chaos run: steady senders, bursts of concurrent POSTs, and a
// Durable Streams appender. Every record carries a unique key; what the funnel
// acknowledged (201, 204 for an append) is kept with the position it named.
import { parseGroupId } from "../../src/ledger/mod.ts";
import { sleep } from "../../src/timers/mod.ts";

/** One acknowledged record: its key, the group the 201 named and the JSON text sent. */
export interface Acked {
  readonly key: string;
  /** Group id as answered, e.g. "e000001-g00000041". */
  readonly group: string;
  /** Its ledger sequence. */
  readonly seq: number;
  readonly body: string;
}

/** One acknowledged Durable Streams append: its key and the position its offset named. */
export interface StreamAcked {
  readonly key: string;
  /** The append's group sequence (ledger sequence + 1), from `Stream-Next-Offset`. */
  readonly position: number;
  readonly body: string;
}

/** Every answer of a run, and what was acknowledged. */
export class Ledgerbook {
  readonly acked: Acked[] = [];
  readonly streamAcked: StreamAcked[] = [];
  /** Answers by status ("error" when the request itself failed). */
  readonly answers: Map<string, number> = new Map();
  #next = 0;

  /** A fresh record key. */
  key(prefix: string): string {
    return `${prefix}${this.#next++}`;
  }

  /** Counts one answer. */
  count(status: number | "error"): void {
    const k = String(status);
    this.answers.set(k, (this.answers.get(k) ?? 0) + 1);
  }
}

const JSON_TYPE = { "content-type": "application/json" };
/** A request the faults keep waiting (a stopped funnel, a stalled database) gives up after this. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The JSON text of a record with key `key`, padded to about `bytes`. */
export function recordBody(key: string, bytes: number): string {
  return JSON.stringify({ k: key, p: "x".repeat(Math.max(0, bytes)) });
}

/** POSTs one record to `base`'s `track`; notes the answer and, on 201, the acknowledgement. */
export async function postRecord(
  book: Ledgerbook,
  base: string,
  track: string,
  bytes: number,
): Promise<void> {
  const key = book.key("r");
  const body = recordBody(key, bytes);
  try {
    const res = await fetch(`${base}/tracks/${track}`, {
      method: "POST",
      headers: JSON_TYPE,
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    book.count(res.status);
    if (res.status !== 201) return;
    const group = (JSON.parse(text) as { group: string }).group;
    book.acked.push({ key, group, seq: parseGroupId(group).seq, body });
  } catch {
    book.count("error");
  }
}

/** Sends `perSecond` records a second (each without waiting for the last) until `signal` aborts. */
export async function steady(
  signal: AbortSignal,
  perSecond: number,
  send: () => Promise<void>,
): Promise<void> {
  const inflight = new Set<Promise<void>>();
  const gap = 1000 / perSecond;
  const start = performance.now();
  for (let n = 0; !signal.aborted; n++) {
    const p = send().finally(() => inflight.delete(p));
    inflight.add(p);
    const wait = start + (n + 1) * gap - performance.now();
    if (wait > 0) await sleep(wait, signal);
  }
  await Promise.all(inflight);
}

/** `count` POSTs at once; resolves when all are answered. */
export async function burst(count: number, send: () => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: count }, send));
}

/** Creates the JSON stream at `url` (retrying while its funnel is not there yet). */
export async function createStream(url: string): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      const res = await fetch(url, { method: "PUT", headers: JSON_TYPE });
      await res.body?.cancel();
      if (res.ok) return;
      if (attempt > 50) throw new Error(`PUT ${url} answered ${res.status}`);
    } catch (e) {
      if (attempt > 50) throw e;
    }
    await sleep(200);
  }
}

/** Appends one message to the stream at `url`; notes the answer and the acknowledged position. */
export async function appendStream(book: Ledgerbook, url: string): Promise<void> {
  const key = book.key("s");
  const body = JSON.stringify({ k: key });
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: JSON_TYPE,
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.body?.cancel();
    book.count(res.status);
    const offset = res.headers.get("stream-next-offset");
    if (!res.ok || !offset) return;
    book.streamAcked.push({ key, position: Number(offset.split("_")[1]), body });
  } catch {
    book.count("error");
  }
}
