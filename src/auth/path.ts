/** Longest broadcast path or prefix accepted in a credential or key set, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 1024;

const encoder = new TextEncoder();

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `path` is not a broadcast path as credentials write it, or undefined
 * when it is one. Paths carry no leading or trailing slash, no empty, `.` or
 * `..` segment and no control character; `allowEmpty` admits `""` (a prefix
 * covering everything).
 */
export function pathProblem(path: string, allowEmpty: boolean): string | undefined {
  if (path === "") return allowEmpty ? undefined : "is empty";
  if (encoder.encode(path).length > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (path.startsWith("/")) return "starts with a slash (write paths without a leading slash)";
  if (path.endsWith("/")) return "ends with a slash";
  if (CONTROL.test(path)) return "contains a control character";
  for (const segment of path.split("/")) {
    if (segment === "") return "has an empty segment";
    if (segment === "." || segment === "..") return `has a "${segment}" segment`;
  }
  return undefined;
}

/** Why `name` is not a track name, or undefined when it is one. */
export function trackProblem(name: string): string | undefined {
  if (name === "") return "is empty";
  if (encoder.encode(name).length > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (name.includes("/")) return "contains a slash";
  if (CONTROL.test(name)) return "contains a control character";
  if (name === "." || name === "..") return `is "${name}"`;
  return undefined;
}

/**
 * Whether `prefix` covers `path`: equal to it, or followed in it by `/`
 * (`a/b` covers `a/b/c` but not `a/bc`); `""` covers every path.
 */
export function prefixCovers(prefix: string, path: string): boolean {
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f;
}

/** Joins two credential paths, either of which may be empty. */
export function joinPath(a: string, b: string): string {
  if (a === "") return b;
  if (b === "") return a;
  return `${a}/${b}`;
}
