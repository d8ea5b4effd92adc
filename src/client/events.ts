/** The events a feed dispatches besides its records. */
import { HttpError, type RefusalReason, RefusedError, TokenError } from "./errors.ts";

/**
 * What a feed is doing: `connecting` (no live subscription yet, or not any
 * more; records may still come from the ledger), `repairing` (subscribed,
 * reading what the subscription missed from the ledger), `live` (subscribed
 * and complete up to the newest record seen), `closed`.
 */
export type FeedState = "connecting" | "live" | "repairing" | "closed";

/** The `statechange` event a feed dispatches. */
export class FeedStateEvent extends Event {
  /** The new state. */
  readonly state: FeedState;
  /** Makes the event. */
  constructor(state: FeedState) {
    super("statechange");
    this.state = state;
  }
}

/**
 * Why a feed reports a problem: `refused` (the server refused the
 * credential), `not_found` (the MoQ server has no such track, yet),
 * `token` (the token function failed), `unreachable` (HTTP requests keep
 * failing: offline, or in a browser possibly CORS or mixed content), or
 * `failed` (anything else that closed the feed).
 */
export type FeedErrorReason = RefusalReason | "refused" | "token" | "unreachable" | "failed";

/**
 * The `error` event: a problem the application may want to show or act
 * on. When `fatal`, the feed has closed and its iteration throws `error`;
 * otherwise the feed keeps retrying with backoff, and says so once per
 * episode (again only after it recovered).
 */
export class FeedErrorEvent extends Event {
  /** Why, as a stable word to branch on. */
  readonly reason: FeedErrorReason;
  /** The error itself (`RefusedError`, `TokenError`, `HttpError`, `NetworkError`, …). */
  readonly error: unknown;
  /** True when the feed closed because of it. */
  readonly fatal: boolean;
  /** Makes the event. */
  constructor(reason: FeedErrorReason, error: unknown, fatal: boolean) {
    super("error");
    this.reason = reason;
    this.error = error;
    this.fatal = fatal;
  }
}

/**
 * The `gap` event: records from `from` up to `to` (group ids, inclusive)
 * could not be delivered and never will be, because the ledger no longer
 * holds them (removed by retention, or a new ledger epoch began). The feed
 * goes on after them; it never skips records silently.
 */
export class FeedGapEvent extends Event {
  /** First group that was skipped. */
  readonly from: string;
  /** Last group that was skipped. */
  readonly to: string;
  /** Always false: these records are lost for good (a gap the feed filled is never reported). */
  readonly recovered = false;
  /** Makes the event. */
  constructor(from: string, to: string) {
    super("gap");
    this.from = from;
    this.to = to;
  }
}

/** The reason an `error` event gives for what closed a feed. */
export function fatalReason(err: unknown): FeedErrorReason {
  if (err instanceof RefusedError) return err.reason === "unauthorized" ? "refused" : "not_found";
  if (err instanceof TokenError) return "token";
  if (err instanceof HttpError && (err.status === 401 || err.status === 403)) return "refused";
  return "failed";
}
