/**
 * The funnel's domain errors: what a request can fail with, independent of
 * HTTP. `error_response.ts` maps them (with auth's and the ledger's errors)
 * to problem+json in one place. A ledger that cannot be reached stays a
 * `LedgerError("unavailable")` and a refused credential an `AuthError`.
 *
 * @module
 */

/** Which limit refused a record. */
export type RateLimitScope = "sender" | "track";

/** A record over a rate limit; the client may retry after `retryAfterSeconds`. */
export class RateLimitedError extends Error {
  /** Stable code for callers. */
  readonly code = "rate_limited";
  /** Whole seconds until the limit has room again. */
  readonly retryAfterSeconds: number;
  /** The sender's own limit on the track, or the track's limit for all senders. */
  readonly scope: RateLimitScope;

  /** Builds the refusal; the message is shown to the client. */
  constructor(scope: RateLimitScope, retryAfterSeconds: number, message: string) {
    super(message);
    this.name = "RateLimitedError";
    this.scope = scope;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A track or group that does not exist; the message says which. */
export class NotFoundError extends Error {
  /** Stable code for callers. */
  readonly code = "not_found";

  /** Builds the error; the message is shown to the client. */
  constructor(message: string) {
    super(message);
    this.name = "NotFoundError";
  }
}

/**
 * A request the service cannot act on as asked: a missing or malformed
 * `group` or `before`, or redacting a redaction.
 */
export class InvalidRequestError extends Error {
  /** Stable code for callers. */
  readonly code = "invalid_request";

  /** Builds the error; the message is shown to the client. */
  constructor(message: string) {
    super(message);
    this.name = "InvalidRequestError";
  }
}
