/**
 * sluice: gather many HTTP senders into one Media-over-QUIC track.
 *
 * This root module starts a funnel: {@link loadFunnelConfig} reads its
 * environment, {@link startFunnel} runs it. The package's other modules:
 * `@sluice/sluice/ledger` (record storage), `@sluice/sluice/auth`
 * (credentials), `@sluice/sluice/moq` (moq-lite sessions, publish and
 * subscribe), `@sluice/sluice/transport` (native QUIC and WebTransport
 * sessions) and the `cli` entry point.
 *
 * @example
 * ```ts
 * import { loadFunnelConfig, startFunnel } from "@sluice/sluice";
 * const funnel = await startFunnel(loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0" }));
 * await funnel.stop();
 * ```
 *
 * @module
 */
export { type FunnelDependencies, type RunningFunnel, startFunnel } from "./funnel/funnel.ts";
export {
  type Env,
  type FunnelConfig,
  type ListenAddress,
  loadFunnelConfig,
  type RelayTarget,
} from "./config/funnel.ts";
export { ConfigError, type ConfigProblem } from "./config/errors.ts";

// Types the three above name in their signatures. Types only: the classes
// among them are built by startFunnel, never by callers.
export type { RateLimit } from "./config/rate_limit.ts";
export type { OriginPolicy } from "./http/cors.ts";
export type { TrackPattern, TrackPatterns } from "./path/mod.ts";
export type { Logger } from "./log/mod.ts";
export type { RecordSink } from "./funnel/sink.ts";
export type { LiveOptions, LiveSide } from "./funnel/live/start.ts";
export type { EntryFetch, LivePublisher } from "./funnel/live/publisher.ts";
export type { RedialTimers, RelayClient, RelayState } from "./funnel/live/relay_client.ts";
export type { WorkerListener } from "./funnel/live/listener/worker_listener_host.ts";
export type { LiveListener } from "./funnel/live/listener/inline_listener.ts";
