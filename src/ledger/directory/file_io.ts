import { SluiceError } from "../../errors/mod.ts";
// The few file operations the directory backend's durability rests on.

/** Whether `path` exists (following symlinks). */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Makes a directory's entries durable (fsync on the directory itself). */
export async function fsyncDir(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

/** Writes every byte, however many calls the file takes. */
export async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += await file.write(bytes.subarray(done));
}

/** Reads bytes `start` to `end` (fewer when the file ends first). */
export async function readRange(
  file: Deno.FsFile,
  start: number,
  end: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(Math.max(0, end - start));
  let done = 0;
  await file.seek(start, Deno.SeekMode.Start);
  while (done < out.length) {
    const n = await file.read(out.subarray(done));
    if (n === null) break;
    done += n;
  }
  return out.subarray(0, done);
}

/** Whether `error` came from the operating system (it carries an errno name such as "EMFILE"). */
export function isSystemError(error: unknown): boolean {
  // Our own errors carry a string `code` too; only the runtime's count.
  return error instanceof Error && !(error instanceof SluiceError) &&
    typeof (error as { code?: unknown }).code === "string";
}

/**
 * Replaces `name` (in directory `dir`) with `bytes`: written beside it as
 * `<name>.tmp`, made durable, then renamed over it, so a crash leaves either
 * file whole.
 */
export async function replaceFile(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${name}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await writeAll(file, bytes);
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, name);
  await fsyncDir(dir);
}
