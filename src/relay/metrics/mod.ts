/**
 * The relay's Prometheus metrics and the byte-rate meter behind its rate gauges.
 *
 * @module
 */

export { createRelayMetrics, MAX_SERIES_PER_METRIC, type RelayMetrics } from "./relay_metrics.ts";
export { RateMeter } from "./rate_meter.ts";
