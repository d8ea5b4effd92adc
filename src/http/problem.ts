import {
  ClientError,
  codeOfStatus,
  type ErrorAnswer,
  HTTP_CODES,
  SluiceError,
} from "../errors/mod.ts";

/** Content type of RFC 9457 problem details. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Standard titles for the statuses sluice answers with. */
const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * An HTTP failure a handler throws with its status; the one error map,
 * {@linkcode errorResponse}, turns it into an `application/problem+json`
 * response (RFC 9457). Its `code` follows from the status (404 `not_found`)
 * unless given.
 */
export class HttpProblem extends ClientError {
  /** The codes this class carries: those an HTTP status stands for. */
  static readonly codes: readonly SluiceError["code"][] = HTTP_CODES;
  /** HTTP status code. */
  readonly status: number;
  /** Extra response headers, such as Retry-After or WWW-Authenticate. */
  readonly headers: Readonly<Record<string, string>>;

  /** `detail` is shown to the client: say what was wrong in words they can act on. */
  constructor(
    status: number,
    detail: string,
    headers: Record<string, string> = {},
    code: SluiceError["code"] = codeOfStatus(status),
  ) {
    super(code, detail);
    this.status = status;
    this.headers = headers;
  }

  /** The status, detail and headers as thrown. */
  override answer(): ErrorAnswer {
    return { status: this.status, detail: this.message, headers: this.headers };
  }
}

/** Logs a failure clients must not see in detail. */
export type ErrorLog = (message: string, error: unknown) => void;

/**
 * The one mapping of a failed request to its problem+json answer, shared by
 * the funnel's routes and Durable Streams: an error that says how it answers
 * ({@linkcode SluiceError.answer}: a client's bad input 400, a refused
 * credential 401 or 403, a limit 429, a missing track 404, an unreachable
 * ledger 503, ...) answers so, with its `code` in the body; anything else,
 * our own `TypeError` or `RangeError` included, is logged and answered 500
 * without detail.
 *
 * @example
 * ```ts
 * errorResponse(new HttpProblem(404, "No such track")); // 404, code "not_found"
 * errorResponse(new TypeError("x is undefined"), log); // 500, logged
 * ```
 */
export function errorResponse(error: unknown, logError?: ErrorLog): Response {
  const answer = error instanceof SluiceError ? error.answer() : undefined;
  if (answer === undefined || !(error instanceof SluiceError)) {
    logError?.("Request failed", error);
    return problemResponse(500, INTERNAL_DETAIL, {}, { code: "internal" });
  }
  return problemResponse(answer.status, answer.detail, { ...answer.headers }, {
    ...answer.extensions,
    code: error.code,
  });
}

const INTERNAL_DETAIL = "The request failed inside the funnel; it has been logged";

/**
 * Builds a problem+json response; its `code` member is `extensions.code`,
 * or else the code the status stands for.
 *
 * @example
 * ```ts
 * problemResponse(400, "limit must be an integer from 1 to 200");
 * ```
 */
export function problemResponse(
  status: number,
  detail: string,
  headers: Record<string, string> = {},
  extensions: Record<string, string | number> = {},
): Response {
  const title = TITLES[status] ?? "Error";
  const body = {
    // RFC 9457 §3.2: extension members beside the standard ones, which they never replace.
    // Every problem names its condition: the code thrown, or the one its status stands for.
    code: codeOfStatus(status),
    ...extensions,
    // RFC 9457 §4.2.1: "about:blank" means the status code says it all; detail says the rest.
    type: "about:blank",
    title,
    status,
    detail,
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, ...headers },
  });
}
