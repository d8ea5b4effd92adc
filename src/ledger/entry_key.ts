// What retention reads from an entry: the payload bytes it stores, and the key
// compaction by key goes by.
import type { LedgerEntry } from "./entry.ts";

/** Longest key compaction takes, in UTF-16 units: a record with a longer key is kept. */
export const COMPACTION_KEY_LENGTH = 1024;

/** Payload bytes of one entry as stored: UTF-8 text or raw bytes. */
export function entryBytes(entry: LedgerEntry): number {
  if (entry.bytes) return entry.bytes.length;
  return entry.payload === undefined ? 0 : utf8Length(entry.payload);
}

function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  // Each surrogate pair counted 2 + 2: a 4-byte sequence.
  return n;
}

/**
 * The key compaction reads from a record: the JSON text of the top-level
 * `field` of its JSON object payload when that is a string or a number, so
 * `"7"` and `7` are two keys. Undefined (the record is never compacted) for
 * a redaction, a redacted or byte record, one carrying protocol metadata,
 * and a key longer than {@link COMPACTION_KEY_LENGTH}.
 */
export function recordKey(entry: LedgerEntry, field: string): string | undefined {
  if (entry.payload === undefined || entry.meta !== undefined || entry.redacts !== undefined) {
    return undefined;
  }
  // Cheap refusal before parsing: a payload that is not an object has no key.
  if (entry.payload.trimStart()[0] !== "{") return undefined;
  let value: unknown;
  try {
    value = (JSON.parse(entry.payload) as Record<string, unknown>)[field];
  } catch {
    return undefined;
  }
  if (typeof value !== "string" && typeof value !== "number") return undefined;
  const key = JSON.stringify(value);
  return key.length <= COMPACTION_KEY_LENGTH ? key : undefined;
}
