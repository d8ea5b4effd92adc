// The command line and constants every fanout process shares.
import { benchArgs } from "../support/args.ts";

/** The command line of every fanout process (the bench, and the children it spawns with --role). */
export const { values } = benchArgs({
  n: { type: "string", default: "10,100,1000" },
  transport: { type: "string", default: "quic,webtransport" },
  seconds: { type: "string", default: "5" },
  size: { type: "string", default: "100" },
  overload: { type: "boolean", default: false },
  only: { type: "string", default: "raw,relay,listener" },
  profile: { type: "string", default: "" },
  warmup: { type: "string", default: "2" },
  turns: { type: "boolean", default: false },
  offer: { type: "string", default: "" },
  tick: { type: "string", default: "1" },
  cli: { type: "string", default: "" },
  // internal: child process roles
  role: { type: "string", default: "bench" },
  port: { type: "string", default: "0" },
  hash: { type: "string", default: "" },
  dir: { type: "string", default: "" },
  kind: { type: "string", default: "raw" },
  late: { type: "string", default: "0" },
});

/** This checkout's command line, the default `--cli`. */
export const OWN_CLI = new URL("../../src/cli.ts", import.meta.url).pathname;
/** The script the children run: bench/fanout/main.ts with a --role. */
export const SELF = new URL("./main.ts", import.meta.url).pathname;
export const PROTOCOL = "moq-lite-05";
export const BROADCAST = "bench/fanout";
export const TRACK = "t";
export const IN_FLIGHT = 16;
export const size = Number(values.size);
/** The transports the subscribers dial. */
export type { Transport } from "./intercept.ts";

/** What a receivers process reports on "snap". */
export interface Snap {
  readonly at: number;
  /** Groups received per session (the first N are the steady sessions). */
  readonly groups: number[];
  /** Highest group sequence received per session (skips are the span not received). */
  readonly highest: number[];
  /** Whether each session finished its setup (failed ones are left out of the rates). */
  readonly ok: boolean[];
  /** Late sessions: setup time in ms, or -1 while not done / failed. */
  readonly lateSetup: number[];
  readonly failed: number;
}
