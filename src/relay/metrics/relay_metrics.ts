import { DEFAULT_SECONDS_BUCKETS, Registry } from "../../metrics/mod.ts";
import type { Counter, Gauge, Histogram } from "../../metrics/mod.ts";

/** Every relay metric of the spec (prefix `sluice_relay_`), with the spec's labels only. */
export interface RelayMetrics {
  /** The registry that renders them. */
  readonly registry: Registry;
  readonly sessionsActive: Gauge;
  readonly sessionsTotal: Counter;
  readonly sessionsClosedTotal: Counter;
  readonly sessionBytesTotal: Counter;
  readonly subscribersActive: Gauge;
  readonly trackSubscriptionsActive: Gauge;
  readonly trackDistributorReusesTotal: Counter;
  readonly trackUpstreamRequestsTotal: Counter;
  readonly trackUpstreamRequestErrorsTotal: Counter;
  readonly trackUpstreamRequestDurationSeconds: Histogram;
  readonly sessionRttMs: Gauge;
  readonly sessionRttSeconds: Histogram;
  readonly sessionEstimatedBitrateBps: Gauge;
  readonly connSmoothedRttMs: Gauge;
  readonly connPacketLossRate: Gauge;
  readonly peersConnected: Gauge;
  readonly peerDialAttemptsTotal: Counter;
  readonly dialRetriesTotal: Counter;
  readonly peerGoawayReceivedTotal: Counter;
  readonly broadcastsActive: Gauge;
  readonly routeReplacementsTotal: Counter;
  readonly routeRejectionsTotal: Counter;
  readonly routesRetained: Gauge;
  readonly routePromotionsTotal: Counter;
  readonly ingressBytesTotal: Counter;
  readonly egressBytesTotal: Counter;
  readonly bufferDepthGroups: Gauge;
  /** Payload bytes held in each track's ring (RELAY_CACHE_BYTES bounds it). */
  readonly bufferBytes: Gauge;
  readonly groupFillsInflight: Gauge;
  readonly groupDeliverySeconds: Histogram;
  readonly subscriberSkipsTotal: Counter;
  readonly groupRepairsTotal: Counter;
  readonly subscribeErrorsTotal: Counter;
  readonly datagramGroupsTotal: Counter;
  readonly datagramFallbacksTotal: Counter;
  readonly datagramTailRepeatsTotal: Counter;
  readonly upstreamQueueOverflowsTotal: Counter;
  /** Updates dropped because a labelled metric held {@linkcode MAX_SERIES_PER_METRIC} series, by metric. */
  readonly metricSeriesOverflowsTotal: Counter;
}

const P = "sluice_relay_";
const RTT_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The three kinds of metric, named under the relay's prefix. */
interface Makers {
  c(name: string, help: string, labels?: string[]): Counter;
  g(name: string, help: string, labels?: string[]): Gauge;
  h(name: string, help: string, labels: string[], buckets: readonly number[]): Histogram;
}

/**
 * Most series one labelled relay metric holds. Label values come from
 * outside (paths, tracks, remote addresses), so each metric is bounded: at
 * 5000 tracks a per-track histogram renders about 1.5 MB. Updates past the
 * bound are dropped and counted in `metric_series_overflows_total{metric}`.
 */
export const MAX_SERIES_PER_METRIC = 5000;

/** Creates the relay's metrics in a fresh registry. */
export function createRelayMetrics(registry: Registry = new Registry()): RelayMetrics {
  // Made last (it is rendered last); the metrics made before it count into it once it exists.
  const overflows: { counter?: Counter } = {};
  // Only labelled metrics can grow; the overflow counter's one label is a metric name.
  const bound = (labels: readonly string[]) =>
    labels.length === 0 ? {} : {
      maxSeries: MAX_SERIES_PER_METRIC,
      onOverflow: (metric: string) => overflows.counter?.inc({ metric }),
    };
  const m: Makers = {
    c: (name, help, labels = []) =>
      registry.counter({ name: P + name, help, labels, ...bound(labels) }),
    g: (name, help, labels = []) =>
      registry.gauge({ name: P + name, help, labels, ...bound(labels) }),
    h: (name, help, labels, buckets) =>
      registry.histogram({ name: P + name, help, labels, buckets, ...bound(labels) }),
  };
  // Registered, and so rendered, in this order.
  const metrics = {
    registry,
    ...sessionMetrics(m),
    ...trackMetrics(m),
    ...rttMetrics(m),
    ...peerMetrics(m),
    ...routeMetrics(m),
    ...deliveryMetrics(m),
    ...datagramMetrics(m),
    metricSeriesOverflowsTotal: registry.counter({
      name: P + "metric_series_overflows_total",
      help:
        `Updates dropped because a labelled metric already held ${MAX_SERIES_PER_METRIC} series.`,
      labels: ["metric"],
    }),
  };
  overflows.counter = metrics.metricSeriesOverflowsTotal;
  return metrics;
}

// Sessions: how many, how they ended, what they moved.
function sessionMetrics({ c, g }: Makers) {
  return {
    sessionsActive: g("sessions_active", "Active MoQT relay sessions."),
    sessionsTotal: c("sessions_total", "Sessions served.", ["transport", "class"]),
    sessionsClosedTotal: c("sessions_closed_total", "Ended sessions.", [
      "transport",
      "class",
      "reason",
    ]),
    sessionBytesTotal: c(
      "session_bytes_total",
      "Bytes of ended sessions, added when a session ends.",
      ["transport", "class", "direction"],
    ),
  };
}

// Subscribers, and the upstream subscriptions their tracks need.
function trackMetrics({ c, g, h }: Makers) {
  return {
    subscribersActive: g("subscribers_active", "Active MoQT track subscribers."),
    trackSubscriptionsActive: g(
      "track_subscriptions_active",
      "Downstream subscriptions observed for a path and track.",
      ["path", "track"],
    ),
    trackDistributorReusesTotal: c(
      "track_distributor_reuses_total",
      "Subscription requests served by an existing distributor.",
      ["path", "track"],
    ),
    trackUpstreamRequestsTotal: c(
      "track_upstream_requests_total",
      "Upstream Subscribe calls started by the relay.",
      ["path", "track"],
    ),
    trackUpstreamRequestErrorsTotal: c(
      "track_upstream_request_errors_total",
      "Failed upstream subscription requests.",
      ["path", "track"],
    ),
    trackUpstreamRequestDurationSeconds: h(
      "track_upstream_request_duration_seconds",
      "Duration of upstream subscription requests.",
      ["path", "track"],
      DEFAULT_SECONDS_BUCKETS,
    ),
  };
}

// Round trips and bandwidth per session or connection.
function rttMetrics({ g, h }: Makers) {
  return {
    sessionRttMs: g("session_rtt_ms", "Smoothed RTT per MoQT session, ms.", ["remote"]),
    sessionRttSeconds: h(
      "session_rtt_seconds",
      "Distribution of session RTT.",
      ["remote"],
      RTT_SECONDS_BUCKETS,
    ),
    sessionEstimatedBitrateBps: g(
      "session_estimated_bitrate_bps",
      "Estimated available bandwidth per session.",
      ["remote"],
    ),
    connSmoothedRttMs: g(
      "conn_smoothed_rtt_ms",
      "QUIC-layer smoothed RTT; native QUIC connections only (not exposed by Deno 2.9, see docs).",
      ["remote"],
    ),
    connPacketLossRate: g(
      "conn_packet_loss_rate",
      "Cumulative packet loss rate (lost/sent), native QUIC connections (not exposed by Deno 2.9, see docs).",
      ["remote"],
    ),
  };
}

// The mesh: peers dialed, retried, and their GOAWAYs.
function peerMetrics({ c, g }: Makers) {
  return {
    peersConnected: g("peers_connected", "Outbound relay peer connections."),
    peerDialAttemptsTotal: c(
      "peer_dial_attempts_total",
      "Outbound peer dial attempts; result is ok or error.",
      ["peer", "result"],
    ),
    dialRetriesTotal: c("dial_retries_total", "Dial retries after a failure.", ["peer"]),
    peerGoawayReceivedTotal: c(
      "peer_goaway_received_total",
      "GOAWAY messages received from upstream peers, by whether a redirect URI was supplied.",
      ["redirect"],
    ),
  };
}

// Route election.
function routeMetrics({ c, g }: Makers) {
  return {
    broadcastsActive: g("broadcasts_active", "Active relay broadcast routes."),
    routeReplacementsTotal: c(
      "route_replacements_total",
      "Existing routes replaced by a strictly better candidate.",
    ),
    routeRejectionsTotal: c(
      "route_rejections_total",
      "Candidates that did not displace the existing route, by reason.",
      ["reason"],
    ),
    routesRetained: g(
      "routes_retained",
      "Route-election losers held as alternates, pending promotion.",
    ),
    routePromotionsTotal: c(
      "route_promotions_total",
      "Retained alternates promoted to active after the incumbent's announcement ended.",
    ),
  };
}

// Fan-out: bytes in and out, ring depth, delivery time, skips and repairs.
function deliveryMetrics({ c, g, h }: Makers) {
  return {
    ingressBytesTotal: c("ingress_bytes_total", "Bytes received from publishers.", ["track"]),
    egressBytesTotal: c(
      "egress_bytes_total",
      "Bytes sent to subscribers, including fan-out.",
      ["track"],
    ),
    bufferDepthGroups: g(
      "buffer_depth_groups",
      "Groups held in the track's ring buffer.",
      ["track"],
    ),
    bufferBytes: g(
      "buffer_bytes",
      "Payload bytes held in the track's ring buffer.",
      ["track"],
    ),
    groupFillsInflight: g(
      "group_fills_inflight",
      "Fill tasks running across all track distributors.",
    ),
    groupDeliverySeconds: h(
      "group_delivery_seconds",
      "Time to deliver a complete group to a subscriber.",
      ["track"],
      DEFAULT_SECONDS_BUCKETS,
    ),
    subscriberSkipsTotal: c(
      "subscriber_skips_total",
      "Subscribers skipped forward after falling behind the ring buffer.",
    ),
    // Beyond the spec: gaps filled instead of skipped (a route change, a lost or dropped group).
    groupRepairsTotal: c(
      "group_repairs_total",
      "Groups missing from a track's upstream that the relay fetched through its route instead.",
    ),
    subscribeErrorsTotal: c(
      "subscribe_errors_total",
      "Failed subscription requests, by error code.",
      ["code"],
    ),
  };
}

// Beyond the spec: how RELAY_DATAGRAM_TRACKS delivery went, and upstream queue overflows.
function datagramMetrics({ c }: Makers) {
  return {
    // Beyond the spec: how RELAY_DATAGRAM_TRACKS delivery went.
    datagramGroupsTotal: c(
      "datagram_groups_total",
      "Groups sent to client subscribers as QUIC datagrams (RELAY_DATAGRAM_TRACKS).",
    ),
    datagramFallbacksTotal: c(
      "datagram_fallbacks_total",
      "Groups of datagram tracks sent on a stream instead: several frames, or too large for a datagram.",
    ),
    datagramTailRepeatsTotal: c(
      "datagram_tail_repeats_total",
      "Last datagram groups of a burst sent again on a stream, so a lost one is noticed.",
    ),
    // Beyond the spec: the relay's own upstream subscriptions falling behind.
    upstreamQueueOverflowsTotal: c(
      "upstream_queue_overflows_total",
      "Groups dropped from the relay's upstream subscription queues because fan-out fell behind.",
    ),
  };
}
