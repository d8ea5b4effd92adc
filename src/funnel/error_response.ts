import { AuthError, bearerChallenge } from "../auth/mod.ts";
import { HttpProblem, problemResponse } from "../http/mod.ts";
import { CommitRefused, LedgerError } from "../ledger/mod.ts";
import { sealRefusal } from "../streams/mod.ts";
import { InvalidRequestError, NotFoundError, RateLimitedError } from "./errors.ts";

/** Logs a failure clients must not see in detail. */
export type ErrorLog = (message: string, error: unknown) => void;

/**
 * The one mapping of a failed request to its problem+json answer: an
 * `HttpProblem` as thrown, a refused credential as 401 (with
 * `WWW-Authenticate`) or 403, a limit as 429 with `Retry-After`, a missing
 * track or group as 404, a bad request as 400, a record refused by the
 * track's seal (a Durable Stream that is closed, or of another content
 * type) as 409, an unreachable ledger as 503; anything else is logged and
 * answered 500 without detail.
 */
export function errorResponse(error: unknown, logError?: ErrorLog): Response {
  if (error instanceof CommitRefused && error.seal !== undefined) error = sealRefusal(error.seal);
  if (error instanceof HttpProblem) {
    return problemResponse(error.status, error.message, { ...error.headers });
  }
  if (error instanceof AuthError) {
    if (error.status === 403) return problemResponse(403, error.message);
    const detail = error.code === "missing"
      ? error.message
      : `The credential was refused: ${error.message}`;
    return problemResponse(401, detail, {
      "www-authenticate": bearerChallenge(error, { realm: "sluice" }),
    });
  }
  if (error instanceof RateLimitedError) {
    return problemResponse(429, error.message, {
      "retry-after": String(error.retryAfterSeconds),
    });
  }
  if (error instanceof NotFoundError) return problemResponse(404, error.message);
  if (error instanceof InvalidRequestError) return problemResponse(400, error.message);
  if (error instanceof LedgerError && error.kind === "unavailable") {
    return problemResponse(
      503,
      "The ledger is unavailable and did not confirm the record. Retry later, with the same Idempotency-Key so it is stored once",
      { "retry-after": "1" },
    );
  }
  logError?.("Request failed", error);
  return problemResponse(500, "The request failed inside the funnel; it has been logged");
}
