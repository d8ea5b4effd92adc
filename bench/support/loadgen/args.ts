// The load generator's command line: its options, usage text and parser.
import { benchArgs } from "../args.ts";

/** Load generator settings (from the command line). */
export interface LoadgenOptions {
  /** Subscriber sessions to hold. */
  readonly subscribers: number;
  /** Groups per second published. */
  readonly rate: number;
  /** Bytes per group (at least 8: the send time travels in the first 8). */
  readonly size: number;
  /** Measurement window, seconds. */
  readonly duration: number;
  /** Subscriber worker threads. */
  readonly workers: number;
  /** Concurrent dials per worker (the most in flight at once). */
  readonly concurrency: number;
  /** New sessions per second over all workers (0: as fast as `concurrency` allows). */
  readonly ramp: number;
  /** Where to write the relay's CPU profile (`.cpuprofile`), or undefined for none. */
  readonly profile: string | undefined;
  /** Where to write the relay's heap snapshot taken after the measure window, or undefined. */
  readonly heap: string | undefined;
  /** Which phase the profile covers. */
  readonly profilePhase: "ramp" | "measure";
  /** Profile length, seconds. */
  readonly profileSeconds: number;
  /** What serves the subscribers: `sluice relay`, or the raw baseline (a bare QUIC server). */
  readonly target: "relay" | "raw";
  /** Transport of the subscribers. */
  readonly transport: "quic" | "webtransport" | "websocket";
  /** Extra environment for the spawned relay (e.g. DENO_V8_FLAGS). */
  readonly relayEnv: Record<string, string>;
  /** Seconds to wait after the sessions are up before measuring. */
  readonly settle: number;
  /** Give up ramping when no session came up for this many seconds. */
  readonly rampTimeout: number;
  /**
   * Stop ramping after this many seconds whatever the progress (0: no limit), so a ramp that
   * stalls but still trickles still reaches the measure phase.
   */
  readonly rampLimit: number;
  /** Leave the subscribers' QUIC socket at the host's receive buffer instead of raising it. */
  readonly clientHostBuffer: boolean;
  /** Print the result as JSON too. */
  readonly json: boolean;
  /** Run the relay with a key set and give every session a credential. */
  readonly auth: boolean;
}

const USAGE = `Usage: deno task loadgen [--subscribers N] [--rate GROUPS_PER_S] [--size BYTES]
  [--duration S] [--workers W] [--concurrency C] [--ramp SESSIONS_PER_S]
  [--transport quic|webtransport|websocket] [--target relay|raw] [--relay-env K=V]... [--settle S] [--ramp-timeout S] [--ramp-limit S]
  [--client-host-buffer] [--heap FILE.heapsnapshot] [--profile FILE.cpuprofile] [--profile-phase ramp|measure] [--profile-seconds S] [--auth] [--json]

Starts a relay process on a free port, one publisher and N subscriber sessions
on one track, then measures delivery latency, loss and the relay's memory.
--target raw runs the baseline instead: a bare Deno QUIC server holding N
connections and sending each group to each on a uni stream of its own.`;

/** Parses loadgen arguments; throws TypeError/RangeError with the flag named. */
export function parseLoadgenArgs(args: readonly string[]): LoadgenOptions {
  const { values: v } = benchArgs({
    subscribers: { type: "string", default: "100" },
    rate: { type: "string", default: "30" },
    size: { type: "string", default: "1200" },
    duration: { type: "string", default: "10" },
    workers: { type: "string", default: "1" },
    concurrency: { type: "string", default: "16" },
    ramp: { type: "string", default: "0" },
    profile: { type: "string" },
    heap: { type: "string" },
    "profile-phase": { type: "string", default: "ramp" },
    "profile-seconds": { type: "string", default: "10" },
    transport: { type: "string", default: "quic" },
    target: { type: "string", default: "relay" },
    "relay-env": { type: "string", multiple: true, default: [] },
    settle: { type: "string", default: "2" },
    "ramp-timeout": { type: "string", default: "30" },
    "ramp-limit": { type: "string", default: "0" },
    json: { type: "boolean", default: false },
    "client-host-buffer": { type: "boolean", default: false },
    auth: { type: "boolean", default: false },
  }, { args, usage: USAGE });
  const num = (flag: string, value: string, min: number): number => {
    const n = Number(value);
    if (value === "" || !Number.isFinite(n) || n < min) {
      throw new RangeError(`--${flag} needs a number of at least ${min}, got "${value}"`);
    }
    return n;
  };
  const transport = v.transport;
  if (transport !== "quic" && transport !== "webtransport" && transport !== "websocket") {
    throw new TypeError(`--transport must be quic, webtransport or websocket, got "${transport}"`);
  }
  const target = v.target;
  if (target !== "relay" && target !== "raw") {
    throw new TypeError(`--target must be relay or raw, got "${target}"`);
  }
  if (target === "raw" && v.transport !== "quic") {
    throw new TypeError(`--target raw is native QUIC only, got --transport "${v.transport}"`);
  }
  const phase = v["profile-phase"];
  if (phase !== "ramp" && phase !== "measure") {
    throw new TypeError(`--profile-phase must be ramp or measure, got "${phase}"`);
  }
  const relayEnv: Record<string, string> = {};
  for (const kv of v["relay-env"]) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(kv);
    if (!m) throw new TypeError(`--relay-env needs KEY=VALUE, got "${kv}"`);
    relayEnv[m[1]!] = m[2]!;
  }
  return {
    subscribers: Math.floor(num("subscribers", v.subscribers, 1)),
    rate: num("rate", v.rate, 0.01),
    size: Math.floor(num("size", v.size, 8)),
    duration: num("duration", v.duration, 1),
    workers: Math.floor(num("workers", v.workers, 1)),
    concurrency: Math.floor(num("concurrency", v.concurrency, 1)),
    ramp: num("ramp", v.ramp.replace(/\/s$/, ""), 0),
    profile: v.profile,
    heap: v.heap,
    profilePhase: phase,
    profileSeconds: Math.floor(num("profile-seconds", v["profile-seconds"], 1)),
    transport,
    target,
    relayEnv,
    settle: num("settle", v.settle, 0),
    rampTimeout: num("ramp-timeout", v["ramp-timeout"], 1),
    rampLimit: num("ramp-limit", v["ramp-limit"], 0),
    json: v.json,
    clientHostBuffer: v["client-host-buffer"],
    auth: v.auth,
  };
}
