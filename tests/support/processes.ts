// The one way tests, benchmarks and the load generator run `sluice relay` and `sluice funnel` as
// real child processes: `deno run <flags> src/cli.ts <command>` itself (no task wrapper), so a
// signal (SIGTERM, SIGKILL, SIGSTOP, SIGCONT) reaches the server, with deno.json's task
// permissions unless told otherwise, every stdout and stderr line collected, and readiness
// awaited on the server's own startup line rather than on a timer.
import { fileURLToPath } from "node:url";
import { withDeadline } from "../../src/timers/mod.ts";
import { shippedFlags } from "./shipped_flags.ts";

const CLI = fileURLToPath(new URL("../../src/cli.ts", import.meta.url));

/** A sluice command run as a server. */
export type ServerCommand = "relay" | "funnel";

/** The line each command prints once it serves. */
const READY: Record<ServerCommand, RegExp> = {
  relay: /relay: listening/,
  // The funnel's startup summary ends with its Auth line.
  funnel: /^Auth: /,
};

/** How {@link spawnServer} runs a process. */
export interface ServerOptions {
  /** More environment (on top of the one this process inherits). */
  readonly env?: Record<string, string>;
  /**
   * Inherit nothing but PATH and HOME: the process sees `env` and those (a benchmark's clean
   * room). HOME stays: the AWS SDK under the shipped permissions fails without it.
   */
  readonly clearEnv?: boolean;
  /** Working directory. */
  readonly cwd?: string;
  /**
   * Permission flags: `"shipped"` (default) is deno.json's task of the same name, as `deno task`
   * grants them; `"all"` is `-A` (for a host script such as bench/support/gc_host.ts); or a list.
   */
  readonly flags?: "shipped" | "all" | readonly string[];
  /** More `deno run` options before the script (e.g. `--v8-flags=--expose-gc`). */
  readonly denoArgs?: readonly string[];
  /** `ulimit -n` for the process: a bash that sets it execs Deno, so the pid is Deno's. */
  readonly fileLimit?: number;
  /** The script to run (default this checkout's `src/cli.ts`; another checkout's compares). */
  readonly cli?: string;
  /** The script's arguments (default `[command]`). */
  readonly args?: readonly string[];
  /** Give the process a stdin pipe (default none). */
  readonly stdin?: boolean;
}

/** A running server process and what it has printed so far. */
export interface ServerProcess extends AsyncDisposable {
  readonly command: ServerCommand;
  readonly child: Deno.ChildProcess;
  /** The pid of the Deno this spawned (never a shell's: `fileLimit`'s bash execs Deno). */
  readonly pid: number;
  /**
   * The server's own pid: {@link pid}, or the relay's re-executed child once the relay has
   * restarted itself to apply V8 flags (RELAY_SEMI_SPACE_MB). Linux; elsewhere {@link pid}.
   */
  serverPid(): number;
  /** Every output line so far, stdout and stderr interleaved as they arrived. */
  readonly lines: string[];
  /** The stderr lines alone (the log, where stdout carries the startup summary). */
  readonly stderrLines: string[];
  /** Resolves once both output pipes are drained (after the process ended). */
  readonly done: Promise<unknown>;
  /** Whether the process has exited. */
  exited(): boolean;
  /**
   * Sends `signal` to the server; false when it is gone already. SIGTERM and SIGINT go to
   * {@link pid} (a relay that re-executed itself forwards them); any other signal goes to the
   * server's own process ({@link serverPid}), and a SIGKILL to both.
   */
  signal(signal: Deno.Signal): boolean;
  /** The first line matching `pattern`, if printed yet. */
  line(pattern: RegExp | string): string | undefined;
  /**
   * Waits for a line matching `pattern` (checked as output arrives, no polling); throws with the
   * output when the process exits first, or after `ms` (default 60 s).
   */
  waitForLine(pattern: RegExp | string, ms?: number): Promise<string>;
  /** Waits for the command's ready line (see {@link startServer}). */
  ready(ms?: number): Promise<string>;
  /** Waits, sending nothing, until the process ends by itself and its output is drained. */
  finished(): Promise<Deno.CommandStatus>;
  /** Sends `signal` (default SIGTERM), waits for the exit and the output; the exit status. */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  /** SIGCONTs (in case it was stopped), SIGKILLs and waits: what a test's cleanup does. */
  kill(): Promise<Deno.CommandStatus>;
}

/** The `deno run` command line of `command` under `options`. */
function commandLine(command: ServerCommand, options: ServerOptions): string[] {
  const flags = options.flags ?? "shipped";
  const permissions = flags === "shipped"
    ? shippedFlags(command)
    : flags === "all"
    ? ["-A"]
    : flags;
  return [
    Deno.execPath(),
    "run",
    ...permissions,
    ...(options.denoArgs ?? []),
    options.cli ?? CLI,
    ...(options.args ?? [command]),
  ];
}

const matches = (pattern: RegExp | string) => (l: string): boolean =>
  typeof pattern === "string" ? l.includes(pattern) : pattern.test(l);

/** Starts `command` without waiting for it to serve (a test of a failing start reads `lines`). */
export function spawnServer(command: ServerCommand, options: ServerOptions = {}): ServerProcess {
  const deno = commandLine(command, options);
  const limit = options.fileLimit;
  const child = new Deno.Command(limit === undefined ? deno[0]! : "bash", {
    args: limit === undefined
      ? deno.slice(1)
      : ["-c", `ulimit -n ${Math.trunc(limit)} && exec "$0" "$@"`, ...deno],
    env: options.clearEnv
      ? { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/", ...options.env }
      : options.env ?? {},
    ...(options.clearEnv ? { clearEnv: true } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdin: options.stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const stderrLines: string[] = [];
  const collect = async (s: ReadableStream<Uint8Array>, also?: string[]) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      const split = chunk.split("\n");
      lines.push(...split);
      also?.push(...split);
      wake();
    }
  };
  const done = Promise.all([collect(child.stdout), collect(child.stderr, stderrLines)])
    .finally(wake);
  const serverPid = () => reexecutedPid(child.pid);
  const signal = (sig: Deno.Signal): boolean => {
    if (exited) return false;
    const own = sig === "SIGTERM" || sig === "SIGINT" ? child.pid : serverPid();
    try {
      if (own !== child.pid) Deno.kill(own, sig);
      if (own === child.pid || sig === "SIGKILL") child.kill(sig);
      return true;
    } catch {
      return false; // gone already
    }
  };
  const finished = async () => {
    const s = await status;
    await done;
    return s;
  };
  const stop = (sig: Deno.Signal = "SIGTERM") => {
    signal(sig);
    return finished();
  };
  const waitForLine = (pattern: RegExp | string, ms = 60_000): Promise<string> => {
    const test = matches(pattern);
    let check = () => {};
    const found = new Promise<string>((resolve, reject) => {
      let outputEnded = false;
      done.then(() => (outputEnded = true), () => (outputEnded = true));
      check = () => {
        const line = lines.find(test);
        if (line !== undefined) resolve(line);
        else if (outputEnded) {
          reject(
            new Error(`sluice ${command} ended before printing ${pattern}:\n${lines.join("\n")}`),
          );
        }
      };
      waiters.add(check);
      done.then(check, check);
      check();
    });
    return withDeadline(
      found,
      ms,
      () => new Error(`sluice ${command} printed no ${pattern} in ${ms} ms:\n${lines.join("\n")}`),
    ).finally(() => waiters.delete(check));
  };
  return {
    command,
    child,
    pid: child.pid,
    serverPid,
    lines,
    stderrLines,
    done,
    exited: () => exited,
    signal,
    line: (pattern) => lines.find(matches(pattern)),
    waitForLine,
    ready: (ms) => waitForLine(READY[command], ms),
    finished,
    stop,
    kill: () => {
      signal("SIGCONT");
      return stop("SIGKILL");
    },
    [Symbol.asyncDispose]: async () => {
      signal("SIGCONT");
      await stop("SIGKILL");
    },
  };
}

/** Starts `command` and waits until it serves (throws with its output if it exits first). */
export async function startServer(
  command: ServerCommand,
  options: ServerOptions = {},
): Promise<ServerProcess> {
  const p = spawnServer(command, options);
  try {
    await p.ready();
  } catch (e) {
    await p.kill();
    throw e;
  }
  return p;
}

/** The `http://127.0.0.1:<port>` of a funnel's HTTP API, from its Ingest line. */
export function ingestBase(p: ServerProcess): string {
  const line = p.line(/^Ingest: http:\/\//);
  const port = line && /Ingest: http:\/\/\S+:(\d+)/.exec(line)?.[1];
  if (!port) throw new Error(`the funnel printed no Ingest line:\n${p.lines.join("\n")}`);
  return `http://127.0.0.1:${port}`;
}

/**
 * The child of `pid` running the same program, or `pid`: the relay re-executes itself once to
 * apply V8 flags, and that child is the server. Only the direct child counts: the server's own
 * children are helpers it runs (`sysctl`, reading the UDP buffer sizes at startup), which carry
 * the name `deno` between their fork and exec and are not the server.
 */
export function reexecutedPid(pid: number): number {
  // Any of the process's threads may have spawned the child: each lists its own children.
  let children: number[];
  try {
    children = [...Deno.readDirSync(`/proc/${pid}/task`)].flatMap((task) => {
      try {
        const text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
        return text ? text.split(/\s+/).map(Number) : [];
      } catch {
        return []; // that thread ended meanwhile
      }
    });
  } catch {
    return pid; // no /proc (or the process is gone): the pid we have
  }
  const own = commOf(pid);
  return children.find((child) => commOf(child) === own) ?? pid;
}

/** The program name of `pid` (/proc/<pid>/comm), or undefined when it cannot be read. */
function commOf(pid: number): string | undefined {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/comm`).trim();
  } catch {
    return undefined;
  }
}

/** File descriptors process `pid` has open, from /proc (Linux). */
export function openFiles(pid: number): number {
  return [...Deno.readDirSync(`/proc/${pid}/fd`)].length;
}

/** Resident memory of process `pid` in MiB, from /proc (Linux). */
export function residentMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}
