/**
 * The funnel: HTTP ingest of JSON records into ledger-backed MoQ tracks.
 *
 * @module
 */
export { type FunnelDependencies, type RunningFunnel, startFunnel } from "./funnel.ts";
export {
  FunnelService,
  type FunnelServiceOptions,
  type Poster,
  type PostOutcome,
} from "./service.ts";
export {
  type FunnelEnv,
  funnelHandler,
  funnelRoutes,
  type FunnelRoutesOptions,
  trackPathOf,
} from "./routes.ts";
export type { RecordSink } from "./sink.ts";
export {
  InvalidRequestError,
  NotFoundError,
  RateLimitedError,
  type RateLimitScope,
} from "./errors.ts";
export {
  type LiveListener,
  type LiveOptions,
  LivePublisher,
  type LiveSide,
  type RedialTimers,
  RELAY_REDIAL_MS,
  RelayClient,
  type RelayClientOptions,
  type RelayCredential,
  type RelayState,
  startLiveListener,
} from "./live/mod.ts";
export { RateLimiter, type TakeResult } from "./limits.ts";
export type { RateLimit } from "../config/rate_limit.ts";
export { IDEMPOTENCY_KEYS_PER_TRACK, IdempotencyCache, type PostAnswer } from "./idempotency.ts";
export { MAX_BODY_BYTES, readJsonBody } from "./body.ts";
export { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from "./history.ts";
