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
  /**
   * Subscriptions (SUBSCRIBE, FETCH, TRACK_STATUS) refused because their
   * storage lookup of a track not open was over budget, by `limit`:
   * session, listener (all listener sessions together), relay.
   */
  readonly trackLookupsLimitedTotal: Counter;
  /** Ledger failures by `kind` (unavailable, corrupt, not_found, conflict, other). */
  readonly ledgerErrorsTotal: Counter;
  /** Sessions open on the own MoQ listener. */
  readonly listenerSessions: Gauge;
  /** Subscribers slower than their track that skipped ahead, by `sink` (relay, listener). */
  readonly subscriberSkipsTotal: Counter;
  /** Records subscribers did not receive because they skipped ahead, by `sink`. */
  readonly skippedRecordsTotal: Counter;
  /** The relay session's state: 1 for the current `state`, 0 for the others. */
  readonly relayState: Gauge;
  /** Times the relay session was lost and redialed. */
  readonly relayReconnectsTotal: Counter;
  /** Entries another funnel process committed that this one read and published. */
  readonly recordsLearnedTotal: Counter;
  /** Records retention removed from the ledger, by backend. */
  readonly retentionRemovedTotal: Counter;
  /** Payload bytes of the records retention removed (counted under a bytes limit). */
  readonly retentionRemovedBytesTotal: Counter;
  /** Superseded records compaction by key removed from the ledger, by backend. */
  readonly compactedRecordsTotal: Counter;
  /** Retention passes run here, by outcome: done, skipped (another funnel ran it), failed. */
  readonly retentionPassesTotal: Counter;
  /** Tracks this process has open in its ledger. */
  readonly ledgerOpenTracks: Gauge;
  /** Records stored by the tracks under a retention policy, by backend, as of the last pass. */
  readonly ledgerStoredRecords: Gauge;
  /** Their payload bytes, by backend, as of the last pass. */
  readonly ledgerStoredBytes: Gauge;
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
    trackLookupsLimitedTotal: c(
      "track_lookups_limited_total",
      "Subscriptions to a track not open refused without a storage lookup because the " +
        "lookup budget was spent, by limit (session, listener, relay).",
      ["limit"],
    ),
    ledgerErrorsTotal: c("ledger_errors_total", "Ledger failures, by kind.", ["kind"]),
    listenerSessions: g("listener_sessions", "Sessions open on the own MoQ listener."),
    subscriberSkipsTotal: c(
      "subscriber_skips_total",
      "Times a subscriber was slower than its track (its next record waited past the lag " +
        "bound) and skipped ahead to the newest record, by sink (relay, listener).",
      ["sink"],
    ),
    skippedRecordsTotal: c(
      "skipped_records_total",
      "Records subscribers did not receive live because they skipped ahead, by sink.",
      ["sink"],
    ),
    relayState: g("relay_state", "The relay session's state (1 for the current one).", ["state"]),
    relayReconnectsTotal: c(
      "relay_reconnects_total",
      "Times the relay session was lost and is being redialed.",
    ),
    recordsLearnedTotal: c(
      "records_learned_total",
      "Entries committed by another funnel process on the shared ledger, read and published here.",
    ),
    retentionRemovedTotal: c(
      "retention_removed_records_total",
      "Records removed from the ledger by retention.",
      ["backend"],
    ),
    retentionRemovedBytesTotal: c(
      "retention_removed_bytes_total",
      "Payload bytes of the records retention removed (counted only under a bytes limit).",
      ["backend"],
    ),
    compactedRecordsTotal: c(
      "compacted_records_total",
      "Records compaction by key removed from the ledger (a newer record has the same key).",
      ["backend"],
    ),
    ledgerOpenTracks: g("ledger_open_tracks", "Tracks open in this process's ledger."),
    ledgerStoredRecords: g(
      "ledger_stored_records",
      "Records stored by the tracks under a retention policy, as of the last retention pass.",
      ["backend"],
    ),
    ledgerStoredBytes: g(
      "ledger_stored_bytes",
      "Payload bytes of the records stored by the tracks under a retention policy, as of the " +
        "last retention pass.",
      ["backend"],
    ),
    retentionPassesTotal: c(
      "retention_passes_total",
      "Retention passes: done, skipped (another funnel sharing the ledger ran it) or failed.",
      ["outcome"],
    ),
  };
}
