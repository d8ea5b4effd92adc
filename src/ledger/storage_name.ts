import { segmentProblem } from "../path/mod.ts";
import { trackKey, type TrackPath } from "../record/mod.ts";

/** Longest readable storage name; longer track paths are stored under a hash. */
const MAX_READABLE = 160;
const SAFE = /^[A-Za-z0-9_-]$/;
const encoder = new TextEncoder();

/**
 * A name for a track that is safe as one file name and as one object-key
 * segment: every byte outside `[A-Za-z0-9_-]` (including `/`, `.` and `%`)
 * is written `%XX`, so the name is never `.`/`..`, never holds a separator
 * and decodes back to exactly one track path. Paths whose encoding would
 * exceed {@link MAX_READABLE} bytes are named `~<sha-256 hex>` instead; the
 * backend then stores the path beside the data to list it.
 */
export async function trackStorageName(path: TrackPath): Promise<string> {
  const key = trackKey(path);
  let out = "";
  for (const ch of key) {
    if (SAFE.test(ch)) out += ch;
    else {for (const b of encoder.encode(ch)) {
        out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
      }}
    if (out.length > MAX_READABLE) return "~" + (await sha256Hex(key));
  }
  return out;
}

/** Whether a storage name is a hash that needs the stored path to list. */
export function isHashedName(name: string): boolean {
  return name.startsWith("~");
}

/**
 * Decodes a readable storage name back into a track path, or undefined when
 * it is not one this module wrote (a hashed name, a stray file).
 */
export function decodeStorageName(name: string): TrackPath | undefined {
  if (isHashedName(name) || !/^(?:[A-Za-z0-9_-]|%[0-9A-F]{2})+$/.test(name)) return undefined;
  let key: string;
  try {
    key = decodeURIComponent(name);
  } catch {
    // Not percent-encoding we wrote: not one of our names.
    return undefined;
  }
  return pathFromKey(key);
}

/** Splits a `trackKey` text back into a path; undefined when it has fewer than two segments. */
export function pathFromKey(key: string): TrackPath | undefined {
  const parts = key.split("/");
  if (parts.length < 2 || parts.some((p) => segmentProblem(p) !== undefined)) return undefined;
  const track = parts.pop()!;
  return { broadcast: parts, track };
}

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
