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
 * later would not take effect). Signals are forwarded; resolves with the
 * child's exit code.
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
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
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
  }
}
