/** Which browser origins may call an HTTP API (from CORS_ALLOWED_ORIGINS). */
export type OriginPolicy = { readonly any: true } | {
  readonly any: false;
  readonly origins: ReadonlySet<string>;
};

/** Same-origin only: no CORS headers are ever sent. */
export const SAME_ORIGIN_ONLY: OriginPolicy = { any: false, origins: new Set() };

/**
 * Parses a comma-separated origin list; `*` allows any origin. Throws
 * `TypeError` for an entry that is not an origin (scheme://host[:port]).
 */
export function parseOriginPolicy(value: string | undefined): OriginPolicy {
  if (value === undefined || value.trim() === "") return SAME_ORIGIN_ONLY;
  const entries = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (entries.includes("*")) return { any: true };
  const origins = new Set<string>();
  for (const entry of entries) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new TypeError(`"${entry}" is not an origin such as https://app.example`);
    }
    if (url.origin === "null" || url.origin !== entry.replace(/\/$/, "")) {
      throw new TypeError(`"${entry}" is not an origin such as https://app.example (no path)`);
    }
    origins.add(url.origin);
  }
  return { any: false, origins };
}

/** True when a request from `origin` may proceed under the policy. */
export function originAllowed(policy: OriginPolicy, origin: string): boolean {
  return policy.any || policy.origins.has(origin);
}

/** Options of {@link corsHeaders}. */
export interface CorsOptions {
  readonly methods: readonly string[];
  readonly allowHeaders: readonly string[];
  readonly exposeHeaders: readonly string[];
  readonly maxAgeSeconds?: number;
}

/**
 * CORS response headers for a request from `origin`, or undefined when the
 * origin is not allowed (the browser then blocks the response).
 */
export function corsHeaders(
  policy: OriginPolicy,
  origin: string | null,
  preflight: boolean,
  options: CorsOptions,
): Record<string, string> | undefined {
  if (origin === null || !originAllowed(policy, origin)) return undefined;
  const headers: Record<string, string> = {
    "access-control-allow-origin": policy.any ? "*" : origin,
    "access-control-expose-headers": options.exposeHeaders.join(", "),
  };
  if (!policy.any) headers["vary"] = "Origin";
  if (preflight) {
    headers["access-control-allow-methods"] = options.methods.join(", ");
    headers["access-control-allow-headers"] = options.allowHeaders.join(", ");
    headers["access-control-max-age"] = String(options.maxAgeSeconds ?? 600);
  }
  return headers;
}
