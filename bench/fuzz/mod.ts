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
} from "./hostile.ts";
export { type HealthyPair, type HealthyReport, startHealthyPair } from "./healthy.ts";
