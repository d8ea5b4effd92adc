/*
 * The directory ledger numbers records in the process that writes them, so
 * two processes on one directory would number over each other. A lock file
 * (`<dir>/writer.lock`, created exclusively) names the process that writes:
 * its pid, host and start time. Another process refuses to start while that
 * one is alive; a lock left by a process that died (SIGKILL, power loss) on
 * the same host is taken over. A lock from another host cannot be checked
 * from here, so it is refused with the way to clear it. Backends opened
 * twice in one process share the lock (a test, or an embedder).
 */
import { LedgerError } from "../errors.ts";

/** Who holds the lock. */
interface Holder {
  readonly pid: number;
  readonly hostname: string;
  readonly since: string;
}

/** A held writer lock; released when the last backend of this process closes. */
export interface WriterLock {
  release(): Promise<void>;
}

const held = new Map<string, { count: number }>();

function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "unknown";
  }
}

/** Takes the writer lock of ledger directory `base`, or throws naming its holder. */
export async function takeWriterLock(base: string): Promise<WriterLock> {
  const file = `${base}/writer.lock`;
  const mine = held.get(file);
  if (mine) {
    mine.count++;
    return releaser(file);
  }
  const me: Holder = { pid: Deno.pid, hostname: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await Deno.writeTextFile(file, JSON.stringify(me) + "\n", { createNew: true });
      held.set(file, { count: 1 });
      return releaser(file);
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    const holder = await readHolder(file);
    if (holder && (holder.hostname !== me.hostname || alive(holder.pid))) {
      const where = holder.hostname === me.hostname ? "" : ` on host ${holder.hostname}`;
      throw new LedgerError(
        "unavailable",
        `The ledger directory ${base} is in use by process ${holder.pid}${where} (since ${holder.since}): ` +
          `a directory ledger takes one funnel process. Stop that process, or use a postgres:// ` +
          `ledger to run several${where ? `; if that process is gone, remove ${file}` : ""}`,
      );
    }
    // Left by a process that is gone (or unreadable, half-written by one that died): take it.
    await Deno.remove(file).catch(() => {});
  }
  throw new LedgerError("unavailable", `Cannot take the writer lock ${file}`);
}

function releaser(file: string): WriterLock {
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      const entry = held.get(file);
      if (!entry || --entry.count > 0) return;
      held.delete(file);
      await Deno.remove(file).catch(() => {});
    },
  };
}

async function readHolder(file: string): Promise<Holder | undefined> {
  try {
    const value = JSON.parse(await Deno.readTextFile(file)) as Partial<Holder>;
    if (typeof value.pid !== "number" || typeof value.hostname !== "string") return undefined;
    return { pid: value.pid, hostname: value.hostname, since: String(value.since ?? "?") };
  } catch {
    return undefined;
  }
}

// Linux: a live process has /proc/<pid>. Elsewhere there is no cheap check, so a lock
// of this host counts as left over (the lock then only guards Linux hosts). Our own pid
// without our own entry in `held` is a previous run's (a restarted container reuses pids).
function alive(pid: number): boolean {
  if (pid === Deno.pid) return false;
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
