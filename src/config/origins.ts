/**
 * Browser origins a service admits (CORS_ALLOWED_ORIGINS), parsed from
 * configuration. The HTTP layer applies the policy (`http/cors.ts`); the
 * WebTransport admission checks it too.
 */

/** Which browser origins may call an HTTP API (from CORS_ALLOWED_ORIGINS). */
export type OriginPolicy = { readonly any: true } | {
  readonly any: false;
  readonly origins: ReadonlySet<string>;
};

/** Same-origin only: no CORS headers are ever sent. */
export const SAME_ORIGIN_ONLY: OriginPolicy = { any: false, origins: new Set() };

/**
 * Parses a comma-separated origin list: `"*"` when it names `*` (any
 * origin), else the origins without a trailing slash. Throws `TypeError`
 * for an entry that is not an http or https origin (scheme://host[:port]).
 *
 * @example
 * ```ts
 * parseOriginList("https://app.example, http://localhost:8080"); // ["https://app.example", "http://localhost:8080"]
 * ```
 */
export function parseOriginList(text: string): readonly string[] | "*" {
  const entries = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (entries.includes("*")) return "*";
  return entries.map((entry) => {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new TypeError(`"${entry}" is not an origin such as https://app.example`);
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new TypeError(`"${entry}" is not an http or https origin such as https://app.example`);
    }
    if (url.origin !== entry.replace(/\/$/, "")) {
      throw new TypeError(`"${entry}" is not an origin such as https://app.example (no path)`);
    }
    return url.origin;
  });
}

/** The policy for a parsed origin list (`"*"`: any origin). */
export function originPolicy(list: readonly string[] | "*"): OriginPolicy {
  return list === "*" ? { any: true } : { any: false, origins: new Set(list) };
}

/**
 * Parses CORS_ALLOWED_ORIGINS for the funnel: unset or blank is
 * same-origin only, otherwise {@link parseOriginList}'s rules. Throws
 * `TypeError` for an entry that is not an origin.
 */
export function parseOriginPolicy(value: string | undefined): OriginPolicy {
  if (value === undefined || value.trim() === "") return SAME_ORIGIN_ONLY;
  return originPolicy(parseOriginList(value));
}

/** True when a request from `origin` may proceed under the policy. */
export function originAllowed(policy: OriginPolicy, origin: string): boolean {
  return policy.any || policy.origins.has(origin);
}
