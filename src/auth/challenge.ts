import type { AuthError } from "./errors.ts";

/**
 * The `WWW-Authenticate` value for a refusal (RFC 6750 §3): plain `Bearer`
 * when no credential came, `error="invalid_token"` for a bad one and
 * `error="insufficient_scope"` for a 403.
 */
export function bearerChallenge(error?: AuthError): string {
  if (error === undefined || error.code === "missing") return "Bearer";
  return error.status === 403
    ? 'Bearer error="insufficient_scope"'
    : 'Bearer error="invalid_token"';
}
