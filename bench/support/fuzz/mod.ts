/**
 * The network fuzzer and the soak run: a relay or funnel as a real process,
 * hostile sessions against it, and a healthy pair that must keep delivering.
 *
 * @module
 */
export { type GcSample, startTarget, type Target, type TargetKind } from "./target.ts";
export {
  ACTION_NAMES,
  hostileSession,
  type HostileTally,
  mutate,
  newTally,
  type Rng,
  type Transport,
  TRANSPORTS,
} from "./hostile.ts";
export { WS_ACTION_NAMES } from "./hostile_ws.ts";
export { type HealthyPair, type HealthyReport, startHealthyPair } from "./healthy.ts";
