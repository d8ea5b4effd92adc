/** Errors the client's callers may catch. */

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

/** True for a failure worth retrying: the network, a timeout, 408, 429 or a 5xx other than 501. */
export function retryable(err: unknown): boolean {
  if (err instanceof HttpError) {
    return err.status === 408 || err.status === 429 || (err.status >= 500 && err.status !== 501);
  }
  // fetch rejects with TypeError on network failures; timeouts abort with TimeoutError.
  return err instanceof TypeError || (err as { name?: string })?.name === "TimeoutError";
}
