// The metrics named in the relay-observability spec (svc → sluice), with their types and labels.
export const SPEC_METRICS: readonly { name: string; type: string; labels: string[] }[] = [
  ["sessions_active", "GAUGE", ""],
  ["sessions_total", "COUNTER", "transport,class"],
  ["sessions_closed_total", "COUNTER", "transport,class,reason"],
  ["session_bytes_total", "COUNTER", "transport,class,direction"],
  ["subscribers_active", "GAUGE", ""],
  ["track_subscriptions_active", "GAUGE", "path,track"],
  ["track_distributor_reuses_total", "COUNTER", "path,track"],
  ["track_upstream_requests_total", "COUNTER", "path,track"],
  ["track_upstream_request_errors_total", "COUNTER", "path,track"],
  ["track_upstream_request_duration_seconds", "HISTOGRAM", "path,track"],
  ["session_rtt_ms", "GAUGE", "remote"],
  ["session_rtt_seconds", "HISTOGRAM", "remote"],
  ["session_estimated_bitrate_bps", "GAUGE", "remote"],
  ["conn_smoothed_rtt_ms", "GAUGE", "remote"],
  ["conn_packet_loss_rate", "GAUGE", "remote"],
  ["peers_connected", "GAUGE", ""],
  ["peer_dial_attempts_total", "COUNTER", "peer,result"],
  ["dial_retries_total", "COUNTER", "peer"],
  ["peer_goaway_received_total", "COUNTER", "redirect"],
  ["broadcasts_active", "GAUGE", ""],
  ["route_replacements_total", "COUNTER", ""],
  ["route_rejections_total", "COUNTER", "reason"],
  ["routes_retained", "GAUGE", ""],
  ["route_promotions_total", "COUNTER", ""],
  ["ingress_bytes_total", "COUNTER", "track"],
  ["egress_bytes_total", "COUNTER", "track"],
  ["buffer_depth_groups", "GAUGE", "track"],
  ["group_fills_inflight", "GAUGE", ""],
  ["group_delivery_seconds", "HISTOGRAM", "track"],
  ["subscriber_skips_total", "COUNTER", ""],
  ["subscribe_errors_total", "COUNTER", "code"],
].map(([n, type, labels]) => ({
  name: `sluice_relay_${n}`,
  type: type!,
  labels: labels === "" ? [] : labels!.split(","),
}));

// Metrics the relay serves beyond the spec, each documented in docs/relay.md.
export const BEYOND_SPEC_METRICS: readonly { name: string; type: string; labels: string[] }[] = [
  { name: "sluice_relay_datagram_groups_total", type: "COUNTER", labels: [] },
  { name: "sluice_relay_datagram_fallbacks_total", type: "COUNTER", labels: [] },
];
