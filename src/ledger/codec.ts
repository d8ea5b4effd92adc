import type { LedgerEntry } from "./entry.ts";
import { LedgerError } from "./errors.ts";

/**
 * The stored form of an entry, shared by the directory and S3 backends:
 * short keys, the wallclock as a decimal string (nanoseconds exceed 2^53)
 * and the payload as a JSON string holding the exact posted text.
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
}

/** Converts an entry to its stored object form. */
export function toStored(entry: LedgerEntry): StoredEntry {
  const out: StoredEntry = { e: entry.epoch, s: entry.seq, w: entry.wallclock.toString() };
  if (entry.sender !== undefined) out.u = entry.sender;
  if (entry.payload !== undefined) out.p = entry.payload;
  if (entry.redacts !== undefined) out.r = entry.redacts;
  if (entry.redacted) out.x = true;
  if (entry.idempotencyKey !== undefined) out.k = entry.idempotencyKey;
  return out;
}

function field(value: unknown, kind: "string" | "number", name: string): void {
  const ok = kind === "string" ? typeof value === "string" : typeof value === "number";
  if (!ok) throw new LedgerError("corrupt", `Stored entry has an invalid "${name}" field`);
}

/** Parses one stored object back into an entry; throws `LedgerError("corrupt")` if malformed. */
export function fromStored(value: unknown): LedgerEntry {
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
  return entry;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Encodes a batch of entries as UTF-8 JSON (an array of stored entries). */
export function encodeBatch(entries: readonly LedgerEntry[]): Uint8Array {
  return encoder.encode(JSON.stringify(entries.map(toStored)));
}

/** Decodes a batch written by {@link encodeBatch}; throws `LedgerError("corrupt")` if malformed. */
export function decodeBatch(bytes: Uint8Array): LedgerEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new LedgerError("corrupt", "Stored batch is not valid UTF-8 JSON", { cause: error });
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new LedgerError("corrupt", "Stored batch is not a non-empty array");
  }
  const entries = parsed.map(fromStored);
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.seq !== entries[i - 1]!.seq + 1) {
      throw new LedgerError("corrupt", "Stored batch is not numbered consecutively");
    }
  }
  return entries;
}

/** The entry without its payload, marked redacted. */
export function withoutPayload(entry: LedgerEntry): LedgerEntry {
  const { payload: _payload, ...rest } = entry;
  return { ...rest, redacted: true };
}
