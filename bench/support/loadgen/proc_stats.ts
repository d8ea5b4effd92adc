// Memory and CPU of a process, and the machine's UDP counters, read from /proc
// (Linux; NaN or zeros elsewhere).

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

/** Linux's USER_HZ: clock ticks per second, the unit of {@link cpuTicks}. */
export const CLOCK_TICKS_PER_SECOND = 100;

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

/** The machine's UDP datagrams sent, and those dropped for a full receive buffer (zeros off Linux). */
export function udpCounters(): { sent: number; dropped: number } {
  try {
    const lines = Deno.readTextFileSync("/proc/net/snmp").split("\n").filter((l) =>
      l.startsWith("Udp:")
    );
    const names = lines[0]!.split(/\s+/);
    const values = lines[1]!.split(/\s+/).map(Number);
    const get = (name: string) => values[names.indexOf(name)] ?? 0;
    return { sent: get("OutDatagrams"), dropped: get("RcvbufErrors") };
  } catch {
    // Not Linux, or /proc not readable: no figures.
    return { sent: 0, dropped: 0 };
  }
}
