import { exists } from "./file_io.ts";

/**
 * Whether the file system holding `dir` folds case (macOS and Windows
 * defaults, FAT, some SMB mounts): creates a file with an upper-case name,
 * looks for its lower-case spelling and removes it again. The name starts
 * with `.tmp-`, so one a crash leaves behind is removed at the next open.
 */
export async function foldsCase(dir: string): Promise<boolean> {
  const name = `.tmp-CASE-${crypto.randomUUID().toUpperCase()}`;
  const file = await Deno.open(`${dir}/${name}`, { write: true, createNew: true });
  file.close();
  try {
    return await exists(`${dir}/${name.toLowerCase()}`);
  } finally {
    await Deno.remove(`${dir}/${name}`);
  }
}
