/*
 * The directory ledger numbers records in the process that writes them, so
 * two processes on one directory would number over each other. The writer
 * holds an exclusive advisory lock (flock) on `<dir>/writer.lock` for as long
 * as its backend is open. The kernel decides who holds it and drops it when
 * the holder's process ends however it ends (SIGKILL, OOM kill), so a dead
 * holder never blocks a restart and a live one is never mistaken for dead:
 * no pid is checked, which needs no permission beyond reading and writing
 * the directory (the shipped `--allow-read --allow-write`).
 *
 * The file also names its holder (pid, host, start time), only so a refused
 * process can say who holds it. The file is never removed: removing it would
 * let a third process lock a new file of the same name while a second still
 * waits on the old one. Backends opened twice in one process share the lock
 * (a test, or an embedder): flock would refuse the second open file.
 */
import { LedgerError } from "../errors.ts";
import { writeAll } from "./file_io.ts";

/** Who holds the lock, as the holder wrote it into the file. */
interface Holder {
  readonly pid: number;
  readonly hostname: string;
  readonly since: string;
}

/** A held writer lock; released when the last backend of this process closes. */
export interface WriterLock {
  release(): Promise<void>;
}

/** Locks this process holds, by lock file path: the open file and its backends. */
const held = new Map<string, { file: Deno.FsFile; count: number }>();

function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "unknown";
  }
}

/** Takes the writer lock of ledger directory `base`, or throws naming its holder. */
export async function takeWriterLock(base: string): Promise<WriterLock> {
  const path = `${base}/writer.lock`;
  const mine = held.get(path);
  if (mine) {
    mine.count++;
    return releaser(path);
  }
  const file = await Deno.open(path, { read: true, write: true, create: true });
  let locked = false;
  try {
    locked = await file.tryLock(true);
    if (!locked) throw refusal(base, await readHolder(path));
    const me: Holder = { pid: Deno.pid, hostname: hostname(), since: new Date().toISOString() };
    const text = new TextEncoder().encode(JSON.stringify(me) + "\n");
    await file.truncate(0);
    await file.seek(0, Deno.SeekMode.Start);
    await writeAll(file, text);
  } catch (error) {
    if (locked) await file.unlock().catch(() => {});
    file.close();
    throw error;
  }
  held.set(path, { file, count: 1 });
  return releaser(path);
}

function refusal(base: string, holder: Holder | undefined): LedgerError {
  const who = holder
    ? `process ${holder.pid} on host ${holder.hostname} (since ${holder.since})`
    : "another process";
  return new LedgerError(
    "unavailable",
    `The ledger directory ${base} is in use by ${who}: a directory ledger takes one funnel ` +
      `process. Stop that process, or use a postgres:// ledger to run several`,
  );
}

function releaser(path: string): WriterLock {
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      const entry = held.get(path);
      if (!entry || --entry.count > 0) return;
      held.delete(path);
      // Closing the file alone drops the lock; unlocking first says so explicitly.
      await entry.file.unlock().catch(() => {});
      entry.file.close();
    },
  };
}

// The holder writes its name just after locking: a refused process may read it
// half-written or empty, and then names no one.
async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    const value = JSON.parse(await Deno.readTextFile(path)) as Partial<Holder>;
    if (typeof value.pid !== "number" || typeof value.hostname !== "string") return undefined;
    return { pid: value.pid, hostname: value.hostname, since: String(value.since ?? "?") };
  } catch {
    return undefined;
  }
}
