/**
 * Operating the relay: its HTTP endpoints (/health, /routes, /metrics,
 * profiling), `sluice doctor`, and the re-exec that applies V8 flags.
 *
 * @module
 */

export { parentGone, ReexecNotAllowedError, reexecWithV8Flags } from "./reexec.ts";
export { DOCTOR_HEADING, type DoctorOptions, renderGcBlock, runDoctor } from "./doctor.ts";
export { createRelayHandler, type OpsAccess } from "./http_handler.ts";
export { cpuProfile } from "./pprof.ts";
