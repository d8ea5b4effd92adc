import type { AuthError } from "./errors.ts";

/** Options of {@link bearerChallenge}. */
export interface BearerChallengeOptions {
  /** The protection space to name (`realm="…"`); none when absent. */
  readonly realm?: string;
}

/**
 * The `WWW-Authenticate` value for a refusal (RFC 6750 §3): plain `Bearer`
 * when no credential came, `error="invalid_token"` for a bad one and
 * `error="insufficient_scope"` for a 403, after the realm when one is named.
 *
 * @example
 * ```ts
 * bearerChallenge(new AuthError("expired", "old"), { realm: "sluice" });
 * // 'Bearer realm="sluice", error="invalid_token"'
 * ```
 */
export function bearerChallenge(error?: AuthError, options: BearerChallengeOptions = {}): string {
  const params: string[] = [];
  if (options.realm !== undefined) params.push(`realm=${quoted(options.realm)}`);
  if (error !== undefined && error.code !== "missing") {
    params.push(error.status === 403 ? 'error="insufficient_scope"' : 'error="invalid_token"');
  }
  return params.length === 0 ? "Bearer" : `Bearer ${params.join(", ")}`;
}

// RFC 9110 §5.6.4: a quoted-string escapes `"` and `\` with a backslash.
function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, "\\$&")}"`;
}
