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
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * An HTTP failure a handler throws; the server's error mapper turns it into
 * an `application/problem+json` response (RFC 9457) in one place.
 */
export class HttpProblem extends Error {
  /** HTTP status code. */
  readonly status: number;
  /** Extra response headers, such as Retry-After or WWW-Authenticate. */
  readonly headers: Readonly<Record<string, string>>;

  /** `detail` is shown to the client: say what was wrong in words they can act on. */
  constructor(status: number, detail: string, headers: Record<string, string> = {}) {
    super(detail);
    this.name = "HttpProblem";
    this.status = status;
    this.headers = headers;
  }
}

/**
 * Builds a problem+json response.
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
): Response {
  const title = TITLES[status] ?? "Error";
  const body = {
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
