/**
 * Broadcast paths on the wire. Internally a path is canonical (see
 * `src/path`): no leading or trailing slash, no empty segments (`demo/cam1`;
 * `""` is the root). Both wire spellings (`/demo/cam1` as gomoqt sends,
 * `demo/cam1` as the JavaScript and Rust libraries send) are accepted;
 * sluice sends the gomoqt spelling, which every camp accepts.
 */
import { normalizePath } from "../path/mod.ts";

/** The gomoqt wire spelling of a path: `/a/b` (`/` for the root). */
export function wirePath(path: string): string {
  return "/" + normalizePath(path);
}

/** The gomoqt wire spelling of a prefix: `/` or `/a/`. */
export function wirePrefix(prefix: string): string {
  const p = normalizePath(prefix);
  return p ? `/${p}/` : "/";
}
