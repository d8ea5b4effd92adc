/**
 * The funnel's domain errors: what a request can fail with, independent of
 * HTTP. Each says how it answers (`answer()`), and `http/`'s `errorResponse`
 * turns them (with auth's and the ledger's errors) into problem+json in one
 * place. A ledger that cannot be reached stays a `LedgerError("unavailable")`
 * and a refused credential an `AuthError`; a client's malformed request is
 * the shared `InvalidRequestError`.
 *
 * @module
 */

import { ClientError, type ErrorAnswer } from "../errors/mod.ts";

export { InvalidRequestError } from "../errors/mod.ts";

/** Which limit refused a record. */
export type RateLimitScope = "sender" | "track";

/** A record over a rate limit; the client may retry after `retryAfterSeconds`. */
export class RateLimitedError extends ClientError {
  /** The codes this class carries. */
  static readonly codes = ["rate_limited"] as const;
  /** Stable code for callers. */
  declare readonly code: "rate_limited";
  /** Whole seconds until the limit has room again. */
  readonly retryAfterSeconds: number;
  /** The sender's own limit on the track, or the track's limit for all senders. */
  readonly scope: RateLimitScope;

  /** Builds the refusal; the message is shown to the client. */
  constructor(scope: RateLimitScope, retryAfterSeconds: number, message: string) {
    super("rate_limited", message);
    this.scope = scope;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** 429 with `Retry-After`. */
  override answer(): ErrorAnswer {
    return {
      status: 429,
      detail: this.message,
      headers: { "retry-after": String(this.retryAfterSeconds) },
    };
  }
}

/** A track or group that does not exist; the message says which. */
export class NotFoundError extends ClientError {
  /** The codes this class carries. */
  static readonly codes = ["not_found"] as const;
  /** Stable code for callers. */
  declare readonly code: "not_found";

  /** Builds the error; the message is shown to the client. */
  constructor(message: string) {
    super("not_found", message);
  }
}

/**
 * Records asked for that retention removed: the track now starts at
 * `first` (a group identifier), which the 410 answer names.
 */
export class GoneError extends ClientError {
  /** The codes this class carries. */
  static readonly codes = ["gone"] as const;
  /** Stable code for callers. */
  declare readonly code: "gone";
  /** The track's first available group. */
  readonly first: string;

  /** Builds the error; the message is shown to the client. */
  constructor(first: string, message: string) {
    super("gone", message);
    this.first = first;
  }

  /** 410, naming the track's first available group in `first`. */
  override answer(): ErrorAnswer {
    return { status: 410, detail: this.message, extensions: { first: this.first } };
  }
}
