/**
 * sluice: gather many HTTP senders into one Media-over-QUIC track.
 *
 * The package's modules: `@sluice/sluice/ledger` (record storage),
 * `@sluice/sluice/auth` (credentials), and the `cli` entry point. This root
 * module re-exports the funnel's programmatic API.
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
export * from "./funnel/mod.ts";
export { type FunnelConfig, loadFunnelConfig } from "./config/funnel.ts";
export { ConfigError } from "./config/errors.ts";
