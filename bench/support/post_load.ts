/**
 * Drives POST load at a local server: with wrk (C, from Debian's packages)
 * when installed, since it leaves the server most of the CPU, else with the
 * raw-TCP Deno client in `http_load.ts`. Also starts a server process and
 * waits for the line that names its port.
 */
import { type LoadResult, postRequest, runLoad } from "./http_load.ts";

/** What to send and for how long. */
export interface PostLoadOptions {
  readonly port: number;
  readonly path: string;
  readonly body: string;
  readonly headers?: Record<string, string>;
  readonly connections: number;
  readonly seconds: number;
}

async function which(name: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if ((await Deno.stat(`${dir}/${name}`)).isFile) return `${dir}/${name}`;
    } catch { /* not here */ }
  }
  return undefined;
}

/** The wrk binary, when installed. */
export const wrkPath: string | undefined = await which("wrk");

/** Names the load generator in use, for the report header. */
export function loadGeneratorName(): string {
  return wrkPath ?? "Deno raw-TCP client (install wrk for a lighter one)";
}

/** Sends POSTs for `seconds` and returns throughput and latency (every answer must be 201). */
export async function postLoad(options: PostLoadOptions): Promise<LoadResult> {
  const headers = options.headers ?? {};
  if (!wrkPath) {
    return await runLoad({
      port: options.port,
      connections: options.connections,
      seconds: options.seconds,
      expectStatus: 201,
      request: () => postRequest(options.path, options.body, headers),
    });
  }
  const dir = await Deno.makeTempDir({ prefix: "sluice-wrk-" });
  try {
    const script = `${dir}/post.lua`;
    const lines = [
      `wrk.method = "POST"`,
      `wrk.body = ${JSON.stringify(options.body)}`,
      `wrk.headers["Content-Type"] = "application/json"`,
      ...Object.entries(headers).map(([k, v]) =>
        `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`
      ),
      // Non-2xx answers count as errors (summary.errors.status).
      `done = function(summary, latency, requests)`,
      `  io.write(string.format("RESULT %d %d %f %f %f\\n", summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.duration, latency:percentile(50), latency:percentile(99)))`,
      `end`,
    ];
    await Deno.writeTextFile(script, lines.join("\n"));
    const out = await new Deno.Command(wrkPath, {
      args: [
        "-t1",
        `-c${options.connections}`,
        `-d${options.seconds}s`,
        "-s",
        script,
        `http://127.0.0.1:${options.port}${options.path}`,
      ],
      stdout: "piped",
    }).output();
    const m = /RESULT (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)/.exec(
      new TextDecoder().decode(out.stdout),
    );
    if (!m) throw new Error("wrk printed no result");
    return {
      requests: Number(m[1]),
      errors: Number(m[2]),
      perSecond: Number(m[1]) / (Number(m[3]) / 1e6),
      p50Ms: Number(m[4]) / 1000,
      p99Ms: Number(m[5]) / 1000,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A server process started by {@link spawnListening}. */
export interface SpawnedServer {
  readonly port: number;
  /** The server process's id (for its CPU time in /proc). */
  readonly pid: number;
  /** Sends SIGTERM to the server process itself and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `deno <args>` with exactly `env` (plus PATH) and resolves once its
 * stdout matches `portPattern` (first group = port). stdout keeps draining.
 */
export async function spawnListening(
  args: string[],
  env: Record<string, string>,
  portPattern: RegExp,
): Promise<SpawnedServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { PATH: Deno.env.get("PATH") ?? "", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`The server exited before listening: ${text}`);
    text += value;
    const m = portPattern.exec(text);
    if (m) break;
  }
  const port = Number(portPattern.exec(text)![1]);
  const draining = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  return {
    port,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await draining;
    },
  };
}
