/**
 * The one vocabulary of error codes: every condition sluice reports has one
 * snake_case spelling here, whichever layer reports it. `status` is the HTTP
 * status when a client is told of it over HTTP; a code without one is never
 * a client's answer (an HTTP request that fails with it is answered 500).
 */
export const ERROR_CODES = {
  // A client's request.
  invalid_request: {
    status: 400,
    meaning: "The request, or a client's text in it, is malformed or cannot be acted on as asked",
  },
  missing: { status: 401, meaning: "No credential was presented" },
  malformed: {
    status: 401,
    meaning: "The credential is not a compact JWT, or its header is not acceptable",
  },
  unknown_key: {
    status: 401,
    meaning: "The credential names a key that is not in the current key set",
  },
  bad_signature: { status: 401, meaning: "The credential's signature does not verify" },
  bad_claims: {
    status: 401,
    meaning: "The credential's claims are missing, mistyped, unknown or inconsistent",
  },
  expired: { status: 401, meaning: "The credential's exp has passed" },
  not_yet_valid: { status: 401, meaning: "The credential's nbf or iat lies in the future" },
  forbidden: { status: 403, meaning: "The credential is valid but does not cover what was asked" },
  unauthorized: {
    meaning: "A MoQ peer refused for credentials (MoQ does not tell missing from insufficient)",
  },
  not_found: { status: 404, meaning: "No such track, group, stream or route" },
  method_not_allowed: { status: 405, meaning: "The resource does not take that method" },
  timeout: { status: 408, meaning: "Something awaited did not arrive in time" },
  conflict: { status: 409, meaning: "The request conflicts with what is stored" },
  gone: { status: 410, meaning: "What was asked for existed but retention removed it" },
  too_large: { status: 413, meaning: "A body, frame, header or count is over its limit" },
  unsupported_media_type: {
    status: 415,
    meaning: "The body's content type is not one the resource takes",
  },
  rate_limited: { status: 429, meaning: "A rate limit refused the request; retry later" },
  unavailable: { status: 503, meaning: "A backend cannot be reached now; retry later" },
  // Refusals and ends.
  refused: { meaning: "The other side, or a gate or seal, declined" },
  closed: { meaning: "The session or connection is gone" },
  cancelled: { meaning: "The caller gave up (unsubscribed or aborted)" },
  stream_reset: { meaning: "The peer abandoned its sending half of a stream (RESET_STREAM)" },
  stream_stopped: { meaning: "The peer no longer reads a stream we send on (STOP_SENDING)" },
  busy: { meaning: "The one slot for this operation is taken" },
  // A peer's bytes.
  protocol_violation: { meaning: "A peer broke the protocol" },
  truncated: { meaning: "The bytes ran out before a value ended" },
  invalid: { meaning: "A decoded value is not allowed where it stands" },
  trailing: { meaning: "Bytes follow where a message should have ended" },
  // Reaching a server.
  invalid_url: { meaning: "An address to dial does not parse or has an unknown scheme" },
  tls_failed: { meaning: "The TLS handshake failed" },
  alpn_refused: { meaning: "The server chose none of the offered application protocols" },
  network: { meaning: "The network failed: no answer, refused, unreachable" },
  self_dial: { meaning: "An address to dial is this process itself" },
  upstream_error: { meaning: "The upstream that serves a track failed" },
  token_failed: { meaning: "The application's token function failed" },
  // Ours.
  corrupt: { meaning: "Stored data cannot be read back as valid" },
  internal: { status: 500, meaning: "The failure is ours: a bug or a broken dependency" },
  invalid_config: { meaning: "A setting in the environment is invalid" },
  invalid_usage: { meaning: "A command line is wrong" },
  reexec_not_allowed: { meaning: "The process may not restart itself with new flags" },
} as const satisfies Record<string, { readonly status?: number; readonly meaning: string }>;

/** A stable, snake_case error code: the key of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes an HTTP answer carries: those with a status. */
export const HTTP_CODES: readonly ErrorCode[] = (Object.keys(ERROR_CODES) as ErrorCode[])
  .filter((code) => statusOf(code) !== undefined);

/** The HTTP status a code answers with, or undefined for a code clients are not told of. */
export function statusOf(code: ErrorCode): number | undefined {
  const entry: { readonly status?: number; readonly meaning: string } = ERROR_CODES[code];
  return entry.status;
}

/** The code an HTTP status stands for, for an answer that names only its status. */
export function codeOfStatus(status: number): ErrorCode {
  for (
    const [code, entry] of Object.entries(ERROR_CODES) as [
      ErrorCode,
      { status?: number; meaning: string },
    ][]
  ) {
    if (entry.status === status && !AUTH_DETAIL.has(code)) return code;
  }
  if (status === 401) return "missing";
  if (status >= 500) return status === 503 ? "unavailable" : "internal";
  return "invalid_request";
}

// 401 has several codes, one per reason; a bare 401 says only that a credential is needed.
const AUTH_DETAIL = new Set<ErrorCode>([
  "missing",
  "malformed",
  "unknown_key",
  "bad_signature",
  "bad_claims",
  "expired",
  "not_yet_valid",
]);
