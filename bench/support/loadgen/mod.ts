/**
 * The relay load generator: N subscriber sessions on one track at a given
 * group rate and size, measuring delivery latency, loss and relay memory.
 *
 * @module
 */
export { type LoadgenOptions, parseLoadgenArgs } from "./args.ts";
export { formatResult, loadgen, LoadgenAborted, type LoadgenResult, runLoadgen } from "./run.ts";
export { LatencyHistogram } from "./latency.ts";
