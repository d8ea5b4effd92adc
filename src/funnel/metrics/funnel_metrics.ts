import { DEFAULT_SECONDS_BUCKETS, Registry } from "../../metrics/mod.ts";
import type { Counter, Gauge, Histogram } from "../../metrics/mod.ts";

/** Every funnel metric (prefix `sluice_funnel_`). */
export interface FunnelMetrics {
  /** The registry that renders them. */
  readonly registry: Registry;
  /** HTTP answers by `route` (post, put, history, redact, health, metrics, other) and `status`. */
  readonly requestsTotal: Counter;
  /** Records (and redactions) this process committed. */
  readonly recordsCommittedTotal: Counter;
  /** Entries per batch this process committed. */
  readonly commitBatchRecords: Histogram;
  /** A POST's wait from its arrival to its record being durable (201 answers that stored). */
  readonly commitLatencySeconds: Histogram;
  /** Commit time to the moment a record is handed to the relay session's track or the listener. */
  readonly publishLagSeconds: Histogram;
  /** POSTs answered with an earlier record for the same Idempotency-Key. */
  readonly idempotentReplaysTotal: Counter;
  /** POSTs refused by a rate limit, by `limit` (sender, track). */
  readonly rateLimitedTotal: Counter;
  /** Ledger failures by `kind` (unavailable, corrupt, not_found, other). */
  readonly ledgerErrorsTotal: Counter;
  /** Sessions open on the own MoQ listener. */
  readonly listenerSessions: Gauge;
  /** The relay session's state: 1 for the current `state`, 0 for the others. */
  readonly relayState: Gauge;
  /** Times the relay session was lost and redialed. */
  readonly relayReconnectsTotal: Counter;
  /** Entries another funnel process committed that this one read and published. */
  readonly recordsLearnedTotal: Counter;
}

const P = "sluice_funnel_";
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/** Creates the funnel's metrics in a fresh registry. */
export function createFunnelMetrics(registry: Registry = new Registry()): FunnelMetrics {
  const c = (name: string, help: string, labels: string[] = []) =>
    registry.counter({ name: P + name, help, labels });
  const g = (name: string, help: string, labels: string[] = []) =>
    registry.gauge({ name: P + name, help, labels });
  const h = (name: string, help: string, labels: string[], buckets: readonly number[]) =>
    registry.histogram({ name: P + name, help, labels, buckets });
  return {
    registry,
    requestsTotal: c("http_requests_total", "HTTP requests answered, by route and status.", [
      "route",
      "status",
    ]),
    recordsCommittedTotal: c(
      "records_committed_total",
      "Entries (records and redactions) this process committed.",
    ),
    commitBatchRecords: h(
      "commit_batch_records",
      "Entries per batch this process committed (group commit).",
      [],
      BATCH_BUCKETS,
    ),
    commitLatencySeconds: h(
      "commit_latency_seconds",
      "From a POST's arrival to its record being durable, for POSTs that stored a record.",
      [],
      DEFAULT_SECONDS_BUCKETS,
    ),
    publishLagSeconds: h(
      "publish_lag_seconds",
      "From a record's commit time to its hand-over to the relay session's track or the own listener.",
      ["sink"],
      DEFAULT_SECONDS_BUCKETS,
    ),
    idempotentReplaysTotal: c(
      "idempotent_replays_total",
      "POSTs answered with the record stored earlier under the same Idempotency-Key.",
    ),
    rateLimitedTotal: c("rate_limited_total", "POSTs refused by a rate limit (429).", ["limit"]),
    ledgerErrorsTotal: c("ledger_errors_total", "Ledger failures, by kind.", ["kind"]),
    listenerSessions: g("listener_sessions", "Sessions open on the own MoQ listener."),
    relayState: g("relay_state", "The relay session's state (1 for the current one).", ["state"]),
    relayReconnectsTotal: c(
      "relay_reconnects_total",
      "Times the relay session was lost and is being redialed.",
    ),
    recordsLearnedTotal: c(
      "records_learned_total",
      "Entries committed by another funnel process on the shared ledger, read and published here.",
    ),
  };
}
