/**
 * The funnel's own metrics (`sluice_funnel_...`, Prometheus text on
 * `/metrics`): requests by route and status, commits, batch sizes, commit
 * latency, publishing lag, replays, rate limits, ledger errors, listener
 * sessions, the relay session, and records learned from other processes.
 *
 * @module
 */
export { createFunnelMetrics, type FunnelMetrics } from "./funnel_metrics.ts";
export { type Handler, meteredHandler, routeOf } from "./metered_handler.ts";
export { commitCounter, meteredReader } from "./commit_readers.ts";
export { errorCounter } from "./counted_errors.ts";
