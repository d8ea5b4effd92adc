/**
 * The sluice relay: moq-lite sessions over native QUIC and WebTransport,
 * per-track fan-out with a ring buffer, a mesh of peer relays with route
 * election, and its observability surface (/health, /routes, /metrics,
 * /debug/pprof) plus `sluice doctor`.
 *
 * @module
 */
export { DOCTOR_HEADING, type DoctorOptions, renderGcBlock, runDoctor } from "./ops/doctor.ts";
export { type RelayOptions, type RunningRelay, startRelay } from "./server.ts";
export { createRelayMetrics, type RelayMetrics } from "./metrics/relay_metrics.ts";
export { RelayCore, SubscribeError } from "./routing/relay_core.ts";
export { runRelay, type RunRelayIo } from "./run.ts";
export { runRelayCommand } from "./command.ts";
export {
  type PeerCredential,
  type PeerEntry,
  Peers,
  type PeerTransport,
  peerTransport,
  type Resolver,
} from "./mesh/peers.ts";
