import { SluiceError } from "../../errors/mod.ts";
import { APPLIED_V8_FLAGS_VARIABLE, type GcResolution } from "../../config/mod.ts";

/** The relay re-executes itself but may not start processes. */
export class ReexecNotAllowedError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["reexec_not_allowed"] as const;
  /** Stable code. */
  declare readonly code: "reexec_not_allowed";
  /** Creates the error. */
  constructor() {
    super(
      "reexec_not_allowed",
      "RELAY_SEMI_SPACE_MB needs the relay to restart itself with V8 flags: run it with " +
        "--allow-run (as `deno task relay` does), or set DENO_V8_FLAGS=--max-semi-space-size=N instead",
    );
  }
}

/** This process's command line: exact from /proc when readable, else rebuilt. */
function commandLine(): string[] {
  try {
    const args = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
    if (args.at(-1) === "") args.pop();
    return args.slice(1);
  } catch {
    // /proc/self needs --allow-all; rebuild with the permissions the relay uses.
    return [
      "run",
      "--unstable-net",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-sys",
      "--allow-run",
      Deno.mainModule,
      ...Deno.args,
    ];
  }
}

/**
 * Re-executes this Deno process with the relay's V8 flags appended to
 * DENO_V8_FLAGS (V8 sizes its heap when the isolate starts, so a flag set
 * later would not take effect). Deno cannot replace its own process (no
 * exec), so this one stays as the child's parent, in the same process group:
 * SIGINT and SIGTERM are forwarded, and the child's stdin is a pipe from here
 * that nothing writes, which ends (EOF) when this process does, however it
 * ends, SIGKILL included; the child stops then ({@linkcode parentGone}).
 * Resolves with the child's exit code.
 */
export async function reexecWithV8Flags(
  gc: GcResolution,
  log: (line: string) => void,
): Promise<number> {
  if (Deno.permissions.querySync({ name: "run" }).state !== "granted") {
    throw new ReexecNotAllowedError();
  }
  const added = gc.apply.join(",");
  const flags = gc.inputs.denoV8Flags === undefined ? added : `${gc.inputs.denoV8Flags},${added}`;
  log(`relay: restarting with DENO_V8_FLAGS=${flags} (from RELAY_SEMI_SPACE_MB)`);
  const child = new Deno.Command(Deno.execPath(), {
    args: commandLine(),
    env: { DENO_V8_FLAGS: flags, [APPLIED_V8_FLAGS_VARIABLE]: added },
    // Held open, never written: its end tells the child this process is gone.
    stdin: "piped",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const lifeline = child.stdin.getWriter();
  const forward = (sig: Deno.Signal) => () => {
    try {
      child.kill(sig);
    } catch {
      // Child already gone.
    }
  };
  const onInt = forward("SIGINT");
  const onTerm = forward("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  try {
    return (await child.status).code;
  } finally {
    Deno.removeSignalListener("SIGINT", onInt);
    Deno.removeSignalListener("SIGTERM", onTerm);
    lifeline.close().catch(() => {});
  }
}

/**
 * In the relay re-executed by {@linkcode reexecWithV8Flags}: resolves once
 * the process that started it is gone, seen as the end of stdin, the pipe it
 * holds open and never writes (a read error counts the same). Whatever
 * arrives on it is discarded.
 */
export async function parentGone(
  stdin: ReadableStream<Uint8Array> = Deno.stdin.readable,
): Promise<void> {
  try {
    for await (const _ of stdin) {
      // Nothing is written; a byte that is is not a message.
    }
  } catch {
    // A broken pipe is a parent gone too.
  }
}
