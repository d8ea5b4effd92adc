/**
 * Broadcast paths, the one home for their rules. A canonical path has no
 * leading or trailing slash and no empty segment (`room/1`; `""` is the
 * root). Credentials, the ledger, the MoQ layer and the relay all write
 * paths this way; the wire spellings live with the MoQ codec.
 *
 * @module
 */

/** Longest broadcast path (or prefix, or track path) accepted, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 1024;

const encoder = new TextEncoder();

// One rule for every path: C0, DEL and C1 control characters and the
// backslash never appear in a path, a segment or a track name.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The character that makes `text` unusable in a path, as words, or undefined. */
function badCharacter(text: string): string | undefined {
  if (CONTROL.test(text)) return "a control character";
  if (text.includes("\\")) return "a backslash";
  return undefined;
}

/** The canonical form of a path or prefix: empty segments (and outer slashes) dropped. */
export function normalizePath(path: string): string {
  return path.split("/").filter((s) => s.length > 0).join("/");
}

/**
 * Why one decoded segment cannot be part of a path, as a sentence
 * (`a segment is empty`), or undefined when it can.
 */
export function segmentProblem(segment: string): string | undefined {
  if (segment === "") return "a segment is empty";
  if (segment === "." || segment === "..") return `segment "${segment}" is not allowed`;
  if (segment.includes("/")) return "a segment contains an encoded slash";
  const bad = badCharacter(segment);
  return bad === undefined ? undefined : `a segment contains ${bad}`;
}

/**
 * Why `path` is not a broadcast path as credentials write it, as a predicate
 * (`starts with a slash …`), or undefined when it is one. Paths carry no
 * leading or trailing slash, no empty, `.` or `..` segment, no control
 * character and no backslash; `allowEmpty` admits `""` (a prefix covering
 * everything).
 */
export function pathProblem(path: string, allowEmpty: boolean): string | undefined {
  if (path === "") return allowEmpty ? undefined : "is empty";
  if (encoder.encode(path).length > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (path.startsWith("/")) return "starts with a slash (write paths without a leading slash)";
  if (path.endsWith("/")) return "ends with a slash";
  const bad = badCharacter(path);
  if (bad !== undefined) return `contains ${bad}`;
  for (const segment of path.split("/")) {
    if (segment === "") return "has an empty segment";
    if (segment === "." || segment === "..") return `has a "${segment}" segment`;
  }
  return undefined;
}

/** Why `name` is not a track name, as a predicate (`contains a slash`), or undefined. */
export function trackNameProblem(name: string): string | undefined {
  if (name === "") return "is empty";
  if (encoder.encode(name).length > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (name.includes("/")) return "contains a slash";
  const bad = badCharacter(name);
  if (bad !== undefined) return `contains ${bad}`;
  if (name === "." || name === "..") return `is "${name}"`;
  return undefined;
}

/**
 * Whether canonical `prefix` covers canonical `path`: equal to it, or
 * followed in it by `/` (`a/b` covers `a/b/c` but not `a/bc`); `""` covers
 * every path.
 */
export function prefixCovers(prefix: string, path: string): boolean {
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f;
}

/** Joins a prefix and a suffix (either may be empty or carry slashes) into a canonical path. */
export function joinPath(prefix: string, suffix: string): string {
  return normalizePath(prefix + "/" + suffix);
}

/** The part of canonical `path` under canonical `prefix` (no leading slash); `prefix` must cover it. */
export function pathSuffix(path: string, prefix: string): string {
  if (prefix === "") return path;
  return path === prefix ? "" : path.slice(prefix.length + 1);
}
