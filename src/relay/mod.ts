/**
 * The sluice relay: moq-lite sessions over native QUIC and WebTransport,
 * per-track fan-out with a ring buffer, a mesh of peer relays with route
 * election, and its observability surface (/health, /routes, /metrics,
 * /debug/pprof) plus `sluice doctor`.
 *
 * @module
 */
export { DOCTOR_HEADING, type DoctorOptions, renderGcBlock, runDoctor } from "./ops/mod.ts";
export { type RelayOptions, type RunningRelay, startRelay } from "./server.ts";
export { createRelayMetrics, type RelayMetrics } from "./metrics/mod.ts";
export { FLOW_LAG_MS, RelayCore, SubscribeError } from "./routing/mod.ts";
export { runRelay, type RunRelayIo } from "./run.ts";
export { runRelayCommand } from "./command.ts";
export { cpuProfile } from "./ops/mod.ts";
export {
  type PeerCredential,
  type PeerEntry,
  Peers,
  type PeerTransport,
  peerTransport,
  type Resolver,
} from "./mesh/mod.ts";
