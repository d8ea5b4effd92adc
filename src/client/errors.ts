/** Errors the client's callers may catch, and which failures are worth retrying. */

import { codeOfStatus, type ErrorCode, HTTP_CODES, SluiceError } from "../errors/mod.ts";

/** The funnel answered an HTTP request with an error status. */
export class HttpError extends SluiceError {
  /** The codes this class carries: the problem's `code` when the server sent one, else the status's. */
  static readonly codes: readonly ErrorCode[] = HTTP_CODES;
  /** The HTTP status, e.g. 401, 403, 404, 429, 503. */
  readonly status: number;
  /** The problem's `detail` (RFC 9457), when the body carried one. */
  readonly detail: string | undefined;
  /** Seconds the server asked to wait before retrying (429, 503), when it said. */
  readonly retryAfter: number | undefined;
  /** On 410 (removed by retention): the track's first available group, when the problem named it. */
  readonly first: string | undefined;
  /** Makes the error. */
  constructor(
    status: number,
    message: string,
    options: {
      detail?: string;
      retryAfter?: number;
      first?: string;
      cause?: unknown;
      code?: ErrorCode;
    } = {},
  ) {
    super(
      options.code ?? codeOfStatus(status),
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.status = status;
    this.detail = options.detail;
    this.retryAfter = options.retryAfter;
    this.first = options.first;
  }
}

/**
 * A request that never got an answer: fetch itself failed (offline, DNS,
 * connection refused; in a browser also CORS and mixed content, which look
 * the same). Retried with backoff; a feed reports it as an `error` event
 * once it has failed several times in a row.
 */
export class NetworkError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["network"] as const;
  /** Stable code. */
  declare readonly code: "network";
  /** Makes the error; `cause` is what fetch threw. */
  constructor(message: string, options?: ErrorOptions) {
    super("network", message, options);
  }
}

/** Why a MoQ server refused a subscription: its credential (`unauthorized`) or no such track. */
export type RefusalReason = (typeof RefusedError.codes)[number];

/** A MoQ server refused the feed's subscription, with the reason its error code carried. */
export class RefusedError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["unauthorized", "not_found"] as const;
  /** "unauthorized" (the credential does not allow it) or "not_found". */
  declare readonly code: RefusalReason;
  /** The same as {@linkcode code}, by its older name. */
  get reason(): RefusalReason {
    return this.code;
  }
  /** Makes the error. */
  constructor(reason: RefusalReason, message: string, options?: ErrorOptions) {
    super(reason, message, options);
  }
}

/**
 * The token function failed `failures` times in a row. A feed reports the
 * first failure at once as a non-fatal `error` event, while the token it
 * holds still works; requests fail with it once that token expired. Until
 * {@linkcode final} the client keeps trying (with backoff); a final one (the
 * held token 60 s past its `exp`, the servers' leeway) closes a feed.
 */
export class TokenError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["token_failed"] as const;
  /** Stable code. */
  declare readonly code: "token_failed";
  /** Calls in a row that failed. */
  readonly failures: number;
  /** True once the client gave up asking. */
  readonly final: boolean;
  /** Makes the error; `cause` is the last failure. */
  constructor(failures: number, final: boolean, options?: ErrorOptions) {
    super(
      "token_failed",
      `The token function failed ${failures} time${failures === 1 ? "" : "s"} in a row`,
      options,
    );
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
