/**
 * The relay's Prometheus metrics and the byte-rate meter behind its rate gauges.
 *
 * @module
 */

export { createRelayMetrics, type RelayMetrics } from "./relay_metrics.ts";
export { RateMeter } from "./rate_meter.ts";
