/**
 * The funnel: HTTP ingest of JSON records into ledger-backed MoQ tracks.
 *
 * {@link startFunnel} runs the whole service (the package root exports it).
 * {@link FunnelService} with {@link funnelRoutes} or {@link funnelHandler} is
 * the HTTP API it is built from, for use in-process; the live side
 * (publisher, own MoQ listener, relay session) is in `./live/mod.ts`.
 *
 * @module
 */
export { runFunnelCommand, waitForSignal } from "./command.ts";
export {
  type EntryFetch,
  type LiveListener,
  startWorkerListener,
  type WorkerListener,
} from "./live/mod.ts";
export { authorize } from "./access.ts";
export { readJsonBody } from "./body.ts";
export { errorResponse } from "./error_response.ts";
export { idempotencyKeyProblem } from "./idempotency.ts";
export { PARSED_PATHS_MAX, trackPathOf, TrackPaths } from "./routes.ts";
export { committedJson } from "./history.ts";
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
  type FunnelRouter,
  funnelRoutes,
  type FunnelRoutesOptions,
} from "./routes.ts";
export {
  GoneError,
  InvalidRequestError,
  NotFoundError,
  RateLimitedError,
  type RateLimitScope,
} from "./errors.ts";
export {
  type LiveOptions,
  LivePublisher,
  type LiveSide,
  RECORD_LAG_MS,
  type RedialTimers,
  RelayClient,
  type RelayState,
  type TrackLookup,
} from "./live/mod.ts";
