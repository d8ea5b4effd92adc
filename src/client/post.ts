/** Posting and redacting records, retried safely. */
import { retryBackoff } from "./backoff.ts";
import { sleep } from "../timers/mod.ts";
import { retryable } from "./errors.ts";
import { type HttpContext, postRecord, redactRecord } from "./http.ts";
import { TokenKeeper, type TokenSource } from "./token.ts";
import { parseTrackUrl } from "./track_url.ts";

/** What the funnel answers for a committed record. */
export interface Committed {
  /** The record's ledger group id. */
  readonly group: string;
  /** Its commit time in Unix nanoseconds. */
  readonly wallclock: bigint;
}

/** Options of {@linkcode post} and {@linkcode redact}. */
export interface PostOptions {
  /** Bearer token, or a function returning a fresh one. */
  readonly token?: TokenSource;
  /**
   * Makes retries safe: the funnel stores a record once per key, sender and
   * track (default: a random UUID per call, so the call's own retries never
   * store it twice). Keys do not survive a funnel restart.
   */
  readonly idempotencyKey?: string;
  /** Attempts in all, for network failures, 408, 429 and 5xx (default 5). */
  readonly attempts?: number;
  /** Abandons the call. */
  readonly signal?: AbortSignal;
  /** The fetch to use (default the global one). */
  readonly fetch?: typeof fetch;
}

/**
 * Posts one JSON value to a track and resolves once it is committed. A
 * failed attempt (network, timeout, 429 after its Retry-After, 5xx) is
 * retried with the same idempotency key, so the record is stored once.
 * Other refusals throw {@linkcode HttpError}.
 *
 * @example
 * ```ts
 * const { group } = await post("http://localhost:8090/tracks/room/1/chat", { text: "hi" });
 * ```
 */
export function post(
  track: string | URL,
  payload: unknown,
  options: PostOptions = {},
): Promise<Committed> {
  const url = parseTrackUrl(track).url;
  const body = JSON.stringify(payload);
  if (body === undefined) {
    return Promise.reject(new TypeError("Cannot post undefined: the payload must be a JSON value"));
  }
  const key = options.idempotencyKey ?? randomKey();
  return withRetries(options, (ctx) => postRecord(ctx, url, body, key));
}

/**
 * Redacts a record (needs a redact scope): the funnel commits a redaction
 * record, which every feed delivers, and deletes the payload. Resolves the
 * redaction, or undefined when the record was redacted already. Retried
 * like {@linkcode post}; a repeat is harmless.
 */
export function redact(
  track: string | URL,
  group: string,
  options: Omit<PostOptions, "idempotencyKey"> = {},
): Promise<Committed | undefined> {
  const url = parseTrackUrl(track).url;
  return withRetries(options, (ctx) => redactRecord(ctx, url, group));
}

/** A random idempotency key (randomUUID needs a secure context; random bytes do not). */
function randomKey(): string {
  if (
    typeof crypto.randomUUID === "function" &&
    (globalThis as { isSecureContext?: boolean }).isSecureContext !== false
  ) {
    return crypto.randomUUID();
  }
  return Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

async function withRetries<T>(
  options: Omit<PostOptions, "idempotencyKey">,
  attempt: (ctx: HttpContext) => Promise<T>,
): Promise<T> {
  const ctx: HttpContext = {
    tokens: new TokenKeeper(options.token),
    signal: options.signal,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const backoff = retryBackoff();
  const attempts = Math.max(1, options.attempts ?? 5);
  for (let n = 1;; n++) {
    try {
      return await attempt(ctx);
    } catch (err) {
      if (n >= attempts || !retryable(err) || options.signal?.aborted) throw err;
      const asked = (err as { retryAfter?: number }).retryAfter;
      await sleep(Math.max(backoff.next(), (asked ?? 0) * 1000), options.signal);
      options.signal?.throwIfAborted();
    }
  }
}
