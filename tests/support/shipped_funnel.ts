// A `sluice funnel` process run the way it ships (tests/support/processes.ts: deno.json's
// `funnel` permissions, its own process), on port 0, optionally under `ulimit -n`; a start that
// fails (a held lock, too few files) is an answer here, not an error.
import { type ServerProcess, spawnServer } from "./processes.ts";

export { openFiles, residentMiB } from "./processes.ts";

/** Options of {@link startShippedFunnel}. */
export interface ShippedFunnelOptions {
  /** More environment (FUNNEL_ADDR is 127.0.0.1:0 and FUNNEL_SERVE_ADDR none unless set). */
  readonly env?: Record<string, string>;
  /** `ulimit -n` for the process. */
  readonly fileLimit?: number;
  /** Another checkout's `src/cli.ts` (with `cwd` its root), to compare before and after. */
  readonly cli?: string;
  /** Working directory. */
  readonly cwd?: string;
  /** How long to wait for it to listen, ms (default 60 s; a start over many tracks may be slower). */
  readonly readyMs?: number;
}

/** A started funnel process; `base` is undefined when it exited before listening. */
export interface ShippedFunnel {
  readonly process: ServerProcess;
  /** `http://127.0.0.1:<port>` of its HTTP API, once it listens. */
  readonly base: string | undefined;
  /** Milliseconds from spawn to listening (or to exiting). */
  readonly startMs: number;
  /** SIGKILLs the process itself and waits for it and its output. */
  kill(): Promise<void>;
}

/** Starts a funnel on `ledger` as shipped; resolves once it listens or has exited. */
export async function startShippedFunnel(
  ledger: string,
  options: ShippedFunnelOptions = {},
): Promise<ShippedFunnel> {
  const started = performance.now();
  const process = spawnServer("funnel", {
    env: {
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "none",
      LEDGER_URI: ledger,
      ...options.env,
    },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.fileLimit === undefined ? {} : { fileLimit: options.fileLimit }),
    ...(options.cli === undefined ? {} : { cli: options.cli }),
  });
  const ingest = /Ingest: http:\/\/\S+:(\d+)/;
  const listening = await process.waitForLine(ingest, options.readyMs).then(
    (line) => ingest.exec(line)?.[1],
    () => undefined, // it exited before listening, or did not listen in time
  );
  const startMs = performance.now() - started;
  return {
    process,
    base: listening && !process.exited() ? `http://127.0.0.1:${listening}` : undefined,
    startMs,
    kill: () => process.kill().then(() => {}),
  };
}
