/**
 * Broadcast path conventions. Internally a path is canonical: no leading or
 * trailing slash, no empty segments (`demo/cam1`; `""` is the root). Both
 * wire spellings (`/demo/cam1` as gomoqt sends, `demo/cam1` as the
 * JavaScript and Rust libraries send) are accepted; sluice sends the gomoqt
 * spelling, which every camp accepts.
 */

/** Canonical form of a path or prefix. */
export function normalizePath(path: string): string {
  return path.split("/").filter((s) => s.length > 0).join("/");
}

/** The gomoqt wire spelling of a path: `/a/b` (`/` for the root). */
export function wirePath(path: string): string {
  return "/" + normalizePath(path);
}

/** The gomoqt wire spelling of a prefix: `/` or `/a/`. */
export function wirePrefix(prefix: string): string {
  const p = normalizePath(prefix);
  return p ? `/${p}/` : "/";
}

/** True when canonical `path` equals or lies under canonical `prefix`, on segment boundaries. */
export function hasPrefix(path: string, prefix: string): boolean {
  return prefix === "" || path === prefix || path.startsWith(prefix + "/");
}

/** The suffix of canonical `path` under canonical `prefix` (no leading slash). */
export function pathSuffix(path: string, prefix: string): string {
  if (prefix === "") return path;
  return path === prefix ? "" : path.slice(prefix.length + 1);
}

/** Joins a canonical prefix and a wire suffix into a canonical path. */
export function joinPath(prefix: string, suffix: string): string {
  return normalizePath(prefix + "/" + suffix);
}
