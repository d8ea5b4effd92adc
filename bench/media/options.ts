// The command line and constants every media/main.ts process shares.
import { benchArgs } from "../support/args.ts";

/** The command line of every media/main.ts process (the bench, and the children it spawns with --role). */
export const { values } = benchArgs({
  n: { type: "string", default: "1,100,1000" },
  fps: { type: "string", default: "30" },
  gop: { type: "string", default: "60" },
  // 2.5 Mbit/s at 30 frames/s.
  frame: { type: "string", default: "10417" },
  seconds: { type: "string", default: "8" },
  warmup: { type: "string", default: "3" },
  only: { type: "string", default: "raw,relay,chain" },
  cli: { type: "string", default: "" },
  // internal: child process roles
  role: { type: "string", default: "bench" },
  kind: { type: "string", default: "raw" },
  port: { type: "string", default: "0" },
  hash: { type: "string", default: "" },
  dir: { type: "string", default: "" },
});

/** The script the children run: bench/media/main.ts with a --role. */
export const SELF = new URL("./main.ts", import.meta.url).pathname;
/** This checkout's command line, the default `--cli`. */
export const OWN_CLI = new URL("../../src/cli.ts", import.meta.url).pathname;
export const PROTOCOL = "moq-lite-05";
export const BROADCAST = "bench/media";
export const TRACK = "video";
export const fps = Number(values.fps);
export const gop = Number(values.gop);
export const frameSize = Math.max(8, Number(values.frame));

/** What a receivers process reports on "snap": delivery since its last "start". */
export interface Snap {
  readonly at: number;
  readonly seconds: number;
  readonly frames: number;
  readonly bytes: number;
  /** Frame latency, publisher write → subscriber read, ms. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly failed: number;
}
