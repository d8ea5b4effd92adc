// `sluice relay` and `sluice funnel` as real child processes for tests:
// `deno run -A src/cli.ts <command>` itself (no task wrapper), so a signal
// reaches the server, with every stdout and stderr line collected.
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../src/cli.ts", import.meta.url));

/** A running server process and what it has printed so far. */
export interface RelayProcess {
  readonly child: Deno.ChildProcess;
  readonly lines: string[];
  /** Resolves once both output pipes are drained (after the process ended). */
  readonly done: Promise<unknown>;
}

/** Starts `sluice <command>` with `env` (and `cwd`), collecting its output lines. */
export function spawnSluice(
  command: "relay" | "funnel",
  env: Record<string, string>,
  cwd?: string,
): RelayProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, command],
    env,
    ...(cwd ? { cwd } : {}),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const collect = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      lines.push(...chunk.split("\n"));
    }
  };
  const done = Promise.all([collect(child.stdout), collect(child.stderr)]);
  return { child, lines, done };
}

/** Starts the relay process with `env` (and `cwd`), collecting its output lines. */
export function spawnRelay(env: Record<string, string>, cwd?: string): RelayProcess {
  return spawnSluice("relay", env, cwd);
}
