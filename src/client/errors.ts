/** Errors the client's callers may catch, and which failures are worth retrying. */

/** The funnel answered an HTTP request with an error status. */
export class HttpError extends Error {
  /** The HTTP status, e.g. 401, 403, 404, 429, 503. */
  readonly status: number;
  /** The problem's `detail` (RFC 9457), when the body carried one. */
  readonly detail: string | undefined;
  /** Seconds the server asked to wait before retrying (429, 503), when it said. */
  readonly retryAfter: number | undefined;
  /** Makes the error. */
  constructor(
    status: number,
    message: string,
    options: { detail?: string; retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HttpError";
    this.status = status;
    this.detail = options.detail;
    this.retryAfter = options.retryAfter;
  }
}

/**
 * A request that never got an answer: fetch itself failed (offline, DNS,
 * connection refused; in a browser also CORS and mixed content, which look
 * the same). Retried with backoff; a feed reports it as an `error` event
 * once it has failed several times in a row.
 */
export class NetworkError extends Error {
  /** Makes the error; `cause` is what fetch threw. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NetworkError";
  }
}

/** Why a MoQ server refused a subscription: its credential (`unauthorized`) or no such track. */
export type RefusalReason = "unauthorized" | "not-found";

/** A MoQ server refused the feed's subscription, with the reason its error code carried. */
export class RefusedError extends Error {
  /** "unauthorized" (the credential does not allow it) or "not-found". */
  readonly reason: RefusalReason;
  /** Makes the error. */
  constructor(reason: RefusalReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RefusedError";
    this.reason = reason;
  }
}

/**
 * The token function failed `failures` times in a row and no valid token is
 * left. Until {@linkcode final} the client keeps trying (with backoff); a
 * final one closes a feed.
 */
export class TokenError extends Error {
  /** Calls in a row that failed. */
  readonly failures: number;
  /** True once the client gave up asking. */
  readonly final: boolean;
  /** Makes the error; `cause` is the last failure. */
  constructor(failures: number, final: boolean, options?: ErrorOptions) {
    super(
      `The token function failed ${failures} time${failures === 1 ? "" : "s"} in a row`,
      options,
    );
    this.name = "TokenError";
    this.failures = failures;
    this.final = final;
  }
}

/**
 * True for a failure worth retrying: the network ({@linkcode NetworkError}),
 * a timeout, 408, 429, a 5xx other than 501, or a token function that has
 * not failed for good yet. Any other error, including a
 * `TypeError` thrown by the application's own code, is not.
 */
export function retryable(err: unknown): boolean {
  if (err instanceof HttpError) {
    return err.status === 408 || err.status === 429 || (err.status >= 500 && err.status !== 501);
  }
  if (err instanceof TokenError) return !err.final;
  return err instanceof NetworkError || (err as { name?: string })?.name === "TimeoutError";
}
