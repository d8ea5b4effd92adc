// Memory and CPU of the relay process, read from /proc (Linux; NaN elsewhere).

/** The deepest descendant of `pid` (the relay re-executes itself for V8 flags). */
export function relayPid(pid: number): number {
  for (;;) {
    let children: string;
    try {
      children = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/children`).trim();
    } catch {
      // No /proc entry for the child: measure the pid we have.
      return pid;
    }
    if (children === "") return pid;
    pid = Number(children.split(/\s+/)[0]);
  }
}

/** Resident set size of `pid` in MiB; NaN when it cannot be read. */
export function rssMib(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    // The process is gone or /proc is unavailable: no figure.
    return NaN;
  }
}

/** CPU time of `pid` (user + system) in clock ticks; NaN when it cannot be read. */
export function cpuTicks(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]); // utime + stime
  } catch {
    // The process is gone or /proc is unavailable: no figure.
    return NaN;
  }
}
