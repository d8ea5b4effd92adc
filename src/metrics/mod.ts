/**
 * Counters, gauges and histograms with fixed label sets, and the Prometheus
 * text exposition writer (HELP and TYPE lines per metric).
 *
 * @module
 */
export { Counter, DEFAULT_SECONDS_BUCKETS, Gauge, Histogram } from "./metric.ts";
export type { HistogramOptions, Metric, MetricOptions } from "./metric.ts";
export { PROMETHEUS_CONTENT_TYPE, Registry } from "./registry.ts";
export type { Labels } from "./labels.ts";
