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
export { type FunnelDependencies, type RunningFunnel, startFunnel } from "./funnel/mod.ts";
export {
  type Env,
  type FunnelConfig,
  type ListenAddress,
  loadFunnelConfig,
  type RelayTarget,
} from "./config/mod.ts";
export { ConfigError, type ConfigProblem } from "./config/mod.ts";

// Types the three above name in their signatures. Types only: the classes
// among them are built by startFunnel, never by callers.
export { type RateLimit } from "./config/mod.ts";
export { type OriginPolicy } from "./http/mod.ts";
export { type Logger } from "./log/mod.ts";
export { type LiveListener, type WorkerListener } from "./funnel/mod.ts";
export type { TrackPattern, TrackPatterns } from "./path/mod.ts";
export type { LiveOptions, LiveSide } from "./funnel/mod.ts";
export type { EntryFetch, LivePublisher, TrackLookup } from "./funnel/mod.ts";
export type { RedialTimers, RelayClient, RelayState } from "./funnel/mod.ts";
