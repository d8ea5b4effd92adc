/** The funnel's HTTP API as the client uses it: history pages, posts and redactions. */
import { type ErrorCode, HTTP_CODES } from "../errors/mod.ts";
import { formatGroupId } from "../record/mod.ts";
import { HttpError, NetworkError, RefusedError } from "./errors.ts";
import { type HistoryPage, parseCommitted, parseHistoryPage } from "./record.ts";
import type { TokenKeeper } from "./token.ts";
import { timeoutSignal, type Timers } from "../timers/mod.ts";

/** The largest page the funnel returns. */
export const MAX_PAGE = 200;

/** How long one HTTP request may take before it is abandoned, ms. */
const REQUEST_TIMEOUT_MS = 10_000;

/** What a request needs besides its URL. */
export interface HttpContext {
  /** The fetch to use (default the global one). */
  readonly fetch?: typeof fetch;
  /** Bearer tokens. */
  readonly tokens: TokenKeeper;
  /** Abandons the request. */
  readonly signal?: AbortSignal | undefined;
  /** The timers of the request's timeout (default the global ones). */
  readonly timers?: Timers;
}

/**
 * Sends one request with the current token. A 401 is retried once with a
 * fresh token when the source can give one. Error statuses throw
 * {@linkcode HttpError}; a request that got no answer throws
 * {@linkcode NetworkError}, a timeout (`timeoutMs`, default 10 s) a `TimeoutError`.
 */
export async function request(
  ctx: HttpContext,
  url: URL,
  init: { method: string; body?: string; headers?: Record<string, string>; timeoutMs?: number },
): Promise<Response> {
  for (let attempt = 0;; attempt++) {
    const token = attempt === 0 ? await ctx.tokens.get() : await ctx.tokens.refresh();
    const headers: Record<string, string> = { ...init.headers };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const timeout = timeoutSignal(init.timeoutMs ?? REQUEST_TIMEOUT_MS, ctx.timers);
    let response: Response;
    try {
      response = await (ctx.fetch ?? fetch)(url, {
        method: init.method,
        headers,
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout,
      });
    } catch (err) {
      // fetch rejects with a TypeError for every failure to get an answer; only those are retried.
      if (!(err instanceof TypeError)) throw err;
      throw new NetworkError(`${init.method} ${url.pathname} failed: ${err.message}`, {
        cause: err,
      });
    }
    if (response.ok) return response;
    if (response.status === 401 && attempt === 0 && ctx.tokens.refreshable) {
      await response.body?.cancel();
      continue;
    }
    throw await httpError(init.method, url, response);
  }
}

async function httpError(method: string, url: URL, response: Response): Promise<HttpError> {
  let detail: string | undefined;
  let first: string | undefined;
  let code: ErrorCode | undefined;
  try {
    const body = await response.json() as {
      detail?: unknown;
      title?: unknown;
      first?: unknown;
      code?: unknown;
    };
    detail = typeof body.detail === "string"
      ? body.detail
      : typeof body.title === "string"
      ? body.title
      : undefined;
    if (typeof body.first === "string") first = body.first;
    // The server's own condition, when it is one of ours and one an HTTP answer carries.
    if (HTTP_CODES.includes(body.code as ErrorCode)) code = body.code as ErrorCode;
  } catch {
    // not a problem document
  }
  const wait = Number(response.headers.get("retry-after"));
  return new HttpError(
    response.status,
    `${method} ${url.pathname} failed with ${response.status}${detail ? `: ${detail}` : ""}`,
    {
      ...(detail === undefined ? {} : { detail }),
      ...(first === undefined ? {} : { first }),
      ...(code === undefined ? {} : { code }),
      ...(Number.isFinite(wait) && wait > 0 ? { retryAfter: wait } : {}),
    },
  );
}

/** Reads one history page of `track` with the given query. */
export async function readPage(
  ctx: HttpContext,
  track: URL,
  query: Record<string, string>,
): Promise<HistoryPage> {
  const url = new URL(track);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const response = await request(ctx, url, { method: "GET" });
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    // The funnel failed mid-page (its ledger stopped answering) and cut the body off: a failed
    // read to retry, never a page to parse or a reason to give up.
    if (!(err instanceof TypeError)) throw err;
    throw new NetworkError(`GET ${url.pathname} was cut off: ${err.message}`, { cause: err });
  }
  return parseHistoryPage(text);
}

/** The `after` cursor that starts a forward page at a track's first record. */
const FROM_FIRST = "e000000-g00000000";

/**
 * The records after `seq` of `epoch` (-1: from the first), oldest first, at
 * most `limit`, and whether newer ones may exist (the page's `after` cursor).
 */
export async function readAfter(
  ctx: HttpContext,
  track: URL,
  epoch: number,
  seq: number,
  limit: number,
): Promise<{ page: HistoryPage; more: boolean }> {
  const after = seq < 0 ? FROM_FIRST : formatGroupId({ epoch, seq });
  const page = await readPage(ctx, track, { after, limit: String(limit) });
  return { page, more: page.after !== undefined };
}

/** POSTs a JSON body with an idempotency key; answers the committed group and wallclock. */
export async function postRecord(
  ctx: HttpContext,
  track: URL,
  body: string,
  idempotencyKey: string,
): Promise<{ group: string; wallclock: bigint }> {
  const response = await request(ctx, track, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
  });
  return parseCommitted(await response.text());
}

/** DELETEs (redacts) a group; answers the redaction, or undefined when it was redacted already. */
export async function redactRecord(
  ctx: HttpContext,
  track: URL,
  group: string,
): Promise<{ group: string; wallclock: bigint } | undefined> {
  const url = new URL(track);
  url.searchParams.set("group", group);
  const response = await request(ctx, url, { method: "DELETE" });
  if (response.status === 204) return undefined;
  return parseCommitted(await response.text());
}

/**
 * Asks the funnel for one record of the track at `url` with the feed's
 * credential: a refusal when it answers 401 or 403 (what a MoQ "not found"
 * may have hidden), else undefined, whatever else happened.
 */
export async function funnelRefuses(
  http: HttpContext,
  url: URL,
): Promise<RefusedError | undefined> {
  try {
    await readPage(http, url, { limit: "1" });
  } catch (err) {
    if (err instanceof HttpError && (err.status === 401 || err.status === 403)) {
      return new RefusedError(
        "unauthorized",
        `The MoQ server refused the subscription, and the funnel the credential: ${err.message}`,
        { cause: err },
      );
    }
  }
  return undefined;
}
