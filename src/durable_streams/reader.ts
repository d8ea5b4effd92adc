import { HttpProblem } from "../http/mod.ts";
import type { Ledger, LedgerEntry } from "../ledger/mod.ts";
import { offsetText } from "./context.ts";
import { H } from "./headers.ts";
import { firstSeq, positionOf, seqAt } from "./lineage.ts";
import { parseMeta } from "./meta.ts";
import type { StreamState } from "./stream_state.ts";

/** Entries read from a stream: data in order, and the position after the last one read. */
export interface ReadBatch {
  /** JSON streams: message texts. */
  readonly messages: string[];
  /** Other streams: byte chunks. */
  readonly chunks: Uint8Array[];
  /** Payload bytes (or JSON text length) read. */
  readonly size: number;
  /** Position after the last entry read (the `from` position when none was). */
  readonly next: number;
}

/** Most payload a catch-up response carries before it stops (it ends at an entry). */
export const READ_CHUNK_BYTES = 1 << 20;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Reads a stream's entries after position `from`, through every segment
 * (a fork's inherited part, then its own), until `limit` bytes of payload
 * or the end. Entries without data (creation, closure, redactions, records
 * whose payload was redacted) advance the position and add nothing. A read
 * from a position whose records the track's retention removed throws 410
 * naming the first offset kept (PROTOCOL.md 5.6); from the stream's start
 * it reads from there.
 */
export async function readAfter(
  ledger: Ledger,
  state: StreamState,
  from: number,
  limit = READ_CHUNK_BYTES,
): Promise<ReadBatch> {
  const messages: string[] = [];
  const chunks: Uint8Array[] = [];
  let size = 0;
  let next = from;
  for (const segment of state.segments) {
    if (segment.last <= next) continue;
    const track = segment === state.own ? state.track : await ledger.track(segment.path, false);
    if (!track) continue;
    const wanted = Math.max(seqAt(segment, next + 1), firstSeq(segment));
    const after = wanted - 1;
    const until = seqAt(segment, Math.min(segment.last, Number.MAX_SAFE_INTEGER));
    // Only a plain track (no protocol entries) loses records to retention, oldest first.
    const fromStart = segment === state.segments[0] && wanted === firstSeq(segment);
    let head = true;
    const entries = track.entries({ after: after < 0 ? undefined : after });
    for await (const entry of entries) {
      if (head && entry.seq > wanted && !fromStart && wanted <= until) {
        throw removed(positionOf(segment, entry.seq) - 1);
      }
      head = false;
      if (entry.seq > until) break;
      const meta = parseMeta(entry.meta);
      if (meta.deleted) break;
      next = positionOf(segment, entry.seq);
      size += addData(entry, meta.n, state.json, messages, chunks);
      // Leaving the loop cancels the entry stream.
      if (size >= limit) return { messages, chunks, size, next };
    }
  }
  return { messages, chunks, size, next };
}

// A skip is never silent: the reader learns where what is kept starts.
function removed(kept: number): HttpProblem {
  const offset = offsetText(kept);
  return new HttpProblem(
    410,
    `The records before offset ${offset} were removed by the track's retention; ` +
      `read from ${offset}, or from -1 for everything kept`,
    { [H.nextOffset]: offset },
  );
}

function addData(
  entry: LedgerEntry,
  n: number | undefined,
  json: boolean,
  messages: string[],
  chunks: Uint8Array[],
): number {
  if (entry.redacted || entry.redacts !== undefined) return 0;
  if (json) {
    const text = entry.payload ?? (entry.bytes && decoder.decode(entry.bytes));
    if (text === undefined) return 0;
    // An entry of several messages holds them as one array; its brackets go.
    const inner = n === undefined ? text : text.trim().slice(1, -1);
    if (inner.trim() === "") return 0;
    messages.push(inner);
    return inner.length;
  }
  const bytes = entry.bytes ??
    (entry.payload === undefined ? undefined : encoder.encode(entry.payload));
  if (!bytes || bytes.length === 0) return 0;
  chunks.push(bytes);
  return bytes.length;
}

/** A JSON stream's messages as one array text. */
export function jsonArray(messages: readonly string[]): string {
  return `[${messages.join(",")}]`;
}

/** Byte chunks joined. */
export function joinChunks(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) (out.set(chunk, at), at += chunk.length);
  return out;
}
