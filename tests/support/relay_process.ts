// `sluice relay` as a real child process for tests: `deno run -A src/cli.ts
// relay` itself (no task wrapper), so a signal reaches the relay, with every
// stdout and stderr line collected.
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../src/cli.ts", import.meta.url));

/** A running relay process and what it has printed so far. */
export interface RelayProcess {
  readonly child: Deno.ChildProcess;
  readonly lines: string[];
  /** Resolves once both output pipes are drained (after the process ended). */
  readonly done: Promise<unknown>;
}

/** Starts the relay process with `env` (and `cwd`), collecting its output lines. */
export function spawnRelay(env: Record<string, string>, cwd?: string): RelayProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, "relay"],
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
