/**
 * Configuration read from the environment: the funnel's and the relay's
 * settings, each checked and explained when wrong. A leaf: it imports only the
 * path rules and error text, so every other folder may read it.
 *
 * @module
 */

export {
  type Env,
  type FunnelConfig,
  funnelExposureWarning,
  type ListenAddress,
  loadFunnelConfig,
  type RelayTarget,
} from "./funnel.ts";
export { ConfigError, type ConfigProblem } from "./errors.ts";
export { type RateLimit } from "./rate_limit.ts";
export { describeListenAddress, formatListenAddress, parseListenAddress } from "./parse.ts";
export {
  APPLIED_V8_FLAGS_VARIABLE,
  type GcResolution,
  resolveGc,
  runtimeV8FlagsArgument,
} from "./gc.ts";
export {
  loadRelayConfig,
  RELAY_DEFAULTS,
  type RelayConfig,
  relayExposureWarning,
} from "./relay.ts";
export { isLoopback } from "./exposure.ts";
export { type Setting } from "./env.ts";
export {
  describeLedgerLocation,
  type LedgerLocation,
  parseLedgerUri,
  type StoreCredentials,
} from "./ledger_location.ts";
export * from "./origins.ts";
export * from "./retention.ts";
export * from "./schemes.ts";
