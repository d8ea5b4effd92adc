import type { LedgerEntry } from "./entry.ts";
import { LedgerError } from "./errors.ts";

/**
 * The stored form of an entry, shared by the directory and S3 backends:
 * short keys, the wallclock as a decimal string (nanoseconds exceed 2^53)
 * and the payload as a JSON string holding the exact posted text. A byte
 * payload is not in the JSON: `b` is its length, and the bytes follow the
 * JSON text (see {@link encodeBatch}). `l` is the seal in force after the entry.
 */
interface StoredEntry {
  e: number;
  s: number;
  w: string;
  u?: string;
  p?: string;
  r?: string;
  x?: true;
  k?: string;
  b?: number;
  m?: string;
  l?: string;
}

/** Converts an entry to its stored object form. */
export function toStored(entry: LedgerEntry): StoredEntry {
  const out: StoredEntry = { e: entry.epoch, s: entry.seq, w: entry.wallclock.toString() };
  if (entry.sender !== undefined) out.u = entry.sender;
  if (entry.payload !== undefined) out.p = entry.payload;
  if (entry.redacts !== undefined) out.r = entry.redacts;
  if (entry.redacted) out.x = true;
  if (entry.idempotencyKey !== undefined) out.k = entry.idempotencyKey;
  if (entry.bytes !== undefined) out.b = entry.bytes.length;
  if (entry.meta !== undefined) out.m = entry.meta;
  if (entry.seal !== undefined) out.l = entry.seal;
  return out;
}

function field(value: unknown, kind: "string" | "number", name: string): void {
  const ok = kind === "string" ? typeof value === "string" : typeof value === "number";
  if (!ok) throw new LedgerError("corrupt", `Stored entry has an invalid "${name}" field`);
}

/**
 * Parses one stored object back into an entry; throws `LedgerError("corrupt")`
 * if malformed. `bytes` takes the byte payload of an entry that has one.
 */
export function fromStored(value: unknown, bytes?: (length: number) => Uint8Array): LedgerEntry {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new LedgerError("corrupt", "Stored entry is not an object");
  }
  const v = value as Record<string, unknown>;
  field(v.e, "number", "e");
  field(v.s, "number", "s");
  field(v.w, "string", "w");
  if (!Number.isSafeInteger(v.s) || (v.s as number) < 0 || !/^\d{1,20}$/.test(v.w as string)) {
    throw new LedgerError("corrupt", "Stored entry has an invalid sequence or wallclock");
  }
  if (!Number.isSafeInteger(v.e) || (v.e as number) < 1) {
    throw new LedgerError("corrupt", `Stored entry has an invalid epoch "${v.e}"`);
  }
  const entry: {
    -readonly [K in keyof LedgerEntry]: LedgerEntry[K];
  } = { epoch: v.e as number, seq: v.s as number, wallclock: BigInt(v.w as string) };
  if (v.u !== undefined) (field(v.u, "string", "u"), entry.sender = v.u as string);
  if (v.p !== undefined) (field(v.p, "string", "p"), entry.payload = v.p as string);
  if (v.r !== undefined) (field(v.r, "string", "r"), entry.redacts = v.r as string);
  if (v.x === true) entry.redacted = true;
  if (v.k !== undefined) (field(v.k, "string", "k"), entry.idempotencyKey = v.k as string);
  if (v.m !== undefined) (field(v.m, "string", "m"), entry.meta = v.m as string);
  if (v.l !== undefined) (field(v.l, "string", "l"), entry.seal = v.l as string);
  if (v.b !== undefined) {
    if (!Number.isSafeInteger(v.b) || (v.b as number) < 0 || !bytes) {
      throw new LedgerError("corrupt", "Stored entry has an invalid byte payload");
    }
    entry.bytes = bytes(v.b as number);
  }
  return entry;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Marks a batch holding byte payloads: this byte, the JSON text's length (u32
 * big-endian), the JSON text, then each byte payload in entry order. JSON
 * text never starts with it, so batches without bytes keep the plain JSON
 * form they always had.
 */
const WITH_BYTES = 0x01;

/**
 * Encodes a batch of entries as UTF-8 JSON (an array of stored entries),
 * followed by the raw byte payloads when some entry has one.
 */
export function encodeBatch(entries: readonly LedgerEntry[]): Uint8Array {
  const json = encoder.encode(JSON.stringify(entries.map(toStored)));
  const blobs = entries.flatMap((e) => e.bytes === undefined ? [] : [e.bytes]);
  if (blobs.length === 0) return json;
  const out = new Uint8Array(5 + json.length + blobs.reduce((n, b) => n + b.length, 0));
  out[0] = WITH_BYTES;
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, 5);
  let at = 5 + json.length;
  for (const blob of blobs) (out.set(blob, at), at += blob.length);
  return out;
}

/** Decodes a batch written by {@link encodeBatch}; throws `LedgerError("corrupt")` if malformed. */
export function decodeBatch(bytes: Uint8Array): LedgerEntry[] {
  let text = bytes;
  let at = 0;
  if (bytes[0] === WITH_BYTES) {
    if (bytes.length < 5) throw new LedgerError("corrupt", "Stored batch is cut short");
    const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
    if (5 + length > bytes.length) throw new LedgerError("corrupt", "Stored batch is cut short");
    text = bytes.subarray(5, 5 + length);
    at = 5 + length;
  }
  // Payloads are copied out, so an entry never pins the whole batch's buffer.
  const take = (length: number): Uint8Array => {
    if (at === 0 || at + length > bytes.length) {
      throw new LedgerError("corrupt", "Stored batch is missing byte payloads");
    }
    at += length;
    return bytes.slice(at - length, at);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(text));
  } catch (error) {
    throw new LedgerError("corrupt", "Stored batch is not valid UTF-8 JSON", { cause: error });
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new LedgerError("corrupt", "Stored batch is not a non-empty array");
  }
  const entries = parsed.map((value) => fromStored(value, take));
  if (at !== 0 && at !== bytes.length) {
    throw new LedgerError("corrupt", "Stored batch has bytes past its payloads");
  }
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.seq !== entries[i - 1]!.seq + 1) {
      throw new LedgerError("corrupt", "Stored batch is not numbered consecutively");
    }
  }
  return entries;
}

/** The entry without its payload (JSON or bytes), marked redacted. */
export function withoutPayload(entry: LedgerEntry): LedgerEntry {
  const { payload: _payload, bytes: _bytes, ...rest } = entry;
  return { ...rest, redacted: true };
}
