import { FileKeySource, type FileKeySourceOptions } from "./file_key_source.ts";
import type { KeySource } from "./key_source.ts";
import { UrlKeySource, type UrlKeySourceOptions } from "./url_key_source.ts";

/** Options for `keySourceFrom`. */
export interface KeySourceOptions extends UrlKeySourceOptions, FileKeySourceOptions {}

/**
 * The key source `value` names (SLUICE_AUTH_KEYS): an https URL, or a file
 * path (a `file:` URL is read as its path). A `http:` URL is refused unless
 * `allowHttp` is set (tests only); any other scheme is refused.
 *
 * @example
 * ```ts
 * const source = keySourceFrom("https://auth.example/keys.json", { cacheFile: "/var/cache/keys.json" });
 * ```
 */
export function keySourceFrom(value: string, options: KeySourceOptions = {}): KeySource {
  if (value === "") throw new TypeError("Key set location is empty");
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return new FileKeySource(value, options);
  if (scheme === "file") {
    let path: string;
    try {
      path = decodeURIComponent(new URL(value).pathname);
    } catch {
      throw new TypeError(`Key set location "${value}" is not a valid file URL`);
    }
    return new FileKeySource(path, options);
  }
  if (scheme === "https" || scheme === "http") return new UrlKeySource(value, options);
  throw new TypeError(`Key set location "${value}" is neither a file path nor an https URL`);
}
