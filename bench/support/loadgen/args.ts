// The load generator's command line: its options, usage text and parser.

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
  /** Concurrent dials per worker. */
  readonly concurrency: number;
  /** Transport of the subscribers. */
  readonly transport: "quic" | "webtransport" | "websocket";
  /** Extra environment for the spawned relay (e.g. DENO_V8_FLAGS). */
  readonly relayEnv: Record<string, string>;
  /** Seconds to wait after the sessions are up before measuring. */
  readonly settle: number;
  /** Give up ramping when no session came up for this many seconds. */
  readonly rampTimeout: number;
  /** Print the result as JSON too. */
  readonly json: boolean;
  /** Run the relay with a key set and give every session a credential. */
  readonly auth: boolean;
}

const USAGE = `Usage: deno task loadgen [--subscribers N] [--rate GROUPS_PER_S] [--size BYTES]
  [--duration S] [--workers W] [--concurrency C] [--transport quic|webtransport|websocket]
  [--relay-env K=V]... [--settle S] [--ramp-timeout S] [--auth] [--json]

Starts a relay process on a free port, one publisher and N subscriber sessions
on one track, then measures delivery latency, loss and the relay's memory.`;

/** Parses loadgen arguments; throws TypeError/RangeError with the flag named. */
export function parseLoadgenArgs(args: readonly string[]): LoadgenOptions {
  const o = {
    subscribers: 100,
    rate: 30,
    size: 1200,
    duration: 10,
    workers: 1,
    concurrency: 16,
    transport: "quic" as "quic" | "webtransport" | "websocket",
    relayEnv: {} as Record<string, string>,
    settle: 2,
    rampTimeout: 30,
    json: false,
    auth: false,
  };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) {
      throw new RangeError(`${flag} needs a number of at least ${min}, got "${v ?? ""}"`);
    }
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const v = args[i + 1];
    switch (a) {
      case "--subscribers":
        o.subscribers = Math.floor(num(a, v, 1));
        i++;
        break;
      case "--rate":
        o.rate = num(a, v, 0.01);
        i++;
        break;
      case "--size":
        o.size = Math.floor(num(a, v, 8));
        i++;
        break;
      case "--duration":
        o.duration = num(a, v, 1);
        i++;
        break;
      case "--workers":
        o.workers = Math.floor(num(a, v, 1));
        i++;
        break;
      case "--concurrency":
        o.concurrency = Math.floor(num(a, v, 1));
        i++;
        break;
      case "--settle":
        o.settle = num(a, v, 0);
        i++;
        break;
      case "--ramp-timeout":
        o.rampTimeout = num(a, v, 1);
        i++;
        break;
      case "--transport":
        if (v !== "quic" && v !== "webtransport" && v !== "websocket") {
          throw new TypeError(
            `--transport must be quic, webtransport or websocket, got "${v ?? ""}"`,
          );
        }
        o.transport = v;
        i++;
        break;
      case "--relay-env": {
        const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(v ?? "");
        if (!m) throw new TypeError(`--relay-env needs KEY=VALUE, got "${v ?? ""}"`);
        o.relayEnv[m[1]!] = m[2]!;
        i++;
        break;
      }
      case "--json":
        o.json = true;
        break;
      case "--auth":
        o.auth = true;
        break;
      default:
        throw new TypeError(`Unknown argument "${a}"\n\n${USAGE}`);
    }
  }
  return o;
}
