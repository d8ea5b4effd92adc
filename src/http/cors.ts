import { originAllowed, type OriginPolicy } from "../config/mod.ts";

export {
  originAllowed,
  type OriginPolicy,
  originPolicy,
  parseOriginList,
  parseOriginPolicy,
  SAME_ORIGIN_ONLY,
} from "../config/mod.ts";

/** Options of {@link corsHeaders} and {@link cors}. */
export interface CorsOptions {
  /** Methods a preflight allows. */
  readonly methods: readonly string[];
  /** Request headers a preflight allows. */
  readonly allowHeaders: readonly string[];
  /** Response headers a script may read. */
  readonly exposeHeaders: readonly string[];
  /** How long a browser may cache a preflight answer (default 600). */
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

/** CORS for one API: answers preflights and marks the responses of allowed origins. */
export interface CorsHandler {
  /**
   * The answer to a preflight (204 with the allowed methods and headers, or
   * 403 for an origin not allowed), or undefined when `request` is not one.
   */
  preflight(request: Request): Response | undefined;
  /** Adds the CORS headers for `request`'s origin to `headers`, when it is allowed. */
  apply(request: Request, headers: Headers): void;
}

/**
 * CORS for an API under `policy`, or undefined when the policy is
 * same-origin only: no request then needs CORS handling at all.
 *
 * @example
 * ```ts
 * const handler = cors(parseOriginPolicy("https://app.example"), {
 *   methods: ["GET", "POST"], allowHeaders: ["content-type"], exposeHeaders: [],
 * });
 * ```
 */
export function cors(policy: OriginPolicy, options: CorsOptions): CorsHandler | undefined {
  if (!policy.any && policy.origins.size === 0) return undefined;
  return {
    preflight(request) {
      if (request.method !== "OPTIONS") return undefined;
      if (!request.headers.has("access-control-request-method")) return undefined;
      const headers = corsHeaders(policy, request.headers.get("origin"), true, options);
      return new Response(null, { status: headers ? 204 : 403, headers: headers ?? {} });
    },
    apply(request, headers) {
      const found = corsHeaders(policy, request.headers.get("origin"), false, options);
      if (found === undefined) return;
      for (const [name, value] of Object.entries(found)) headers.set(name, value);
    },
  };
}
