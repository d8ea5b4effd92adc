/**
 * The doors check: from outside a folder, a module may import only the
 * folder's `mod.ts`. Within one folder, files import each other freely. A test
 * under `tests/<folder>/` may reach inside `src/<folder>/` (and its
 * sub-folders), the code it tests; everything else goes through `mod.ts`.
 *
 * Run: `deno run --allow-read tools/check_doors.ts [--count]`. Exits 1 on any
 * import through a side door and lists them.
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";

const ROOTS = ["src", "tests", "bench", "demo"];
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|(?:^|\n)\s*import\s*["']([^"']+)["']/g;

interface SideDoor {
  from: string;
  to: string;
}

async function* sources(dir: string): AsyncGenerator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = [];
    for await (const e of Deno.readDir(dir)) entries.push(e);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, e.name);
    if (e.isDirectory && e.name !== "node_modules" && !e.name.startsWith(".")) {
      yield* sources(path);
    } else if (e.isFile && /\.(ts|tsx|js|mjs)$/.test(e.name)) yield path;
  }
}

/**
 * Whether `from` may import `to` (both relative to the project root). Find the
 * deepest folder holding both; `to` may be a file of that folder itself, or
 * else must be the `mod.ts` of the folder `to` sits in one level below it: the
 * door of the room being entered.
 */
export function isFrontDoor(from: string, to: string): boolean {
  if (!to.startsWith("src/")) return true; // only src/ has doors
  // A test may reach inside the source folder it tests.
  const test = from.match(/^tests\/([^/]+)\//);
  if (test && test[1] !== "support" && to.startsWith(`src/${test[1]}/`)) return true;
  // From outside src/, each of its folders is a room of its own.
  const fromDirs = from.startsWith("src/") ? dirname(from).split("/") : ["src", ""];
  const toDirs = dirname(to).split("/");
  let shared = 0;
  while (
    shared < fromDirs.length && shared < toDirs.length && fromDirs[shared] === toDirs[shared]
  ) {
    shared++;
  }
  if (shared === toDirs.length) return true; // a file of a folder that holds `from`
  const door = [...toDirs.slice(0, shared + 1), "mod.ts"].join("/");
  return to === door;
}

/** Every import in the project that goes around a folder's `mod.ts`. */
export async function sideDoors(root: string): Promise<SideDoor[]> {
  const found: SideDoor[] = [];
  for (const top of ROOTS) {
    for await (const file of sources(join(root, top))) {
      const text = await Deno.readTextFile(file);
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] ?? m[2] ?? m[3];
        if (!spec || !spec.startsWith(".")) continue;
        const from = relative(root, file);
        const to = relative(root, resolve(dirname(file), spec));
        if (!isFrontDoor(from, to)) found.push({ from, to });
      }
    }
  }
  return found;
}

if (import.meta.main) {
  const doors = await sideDoors(Deno.cwd());
  if (Deno.args.includes("--count")) {
    console.log(doors.length);
  } else if (doors.length > 0) {
    for (const d of doors) console.error(`${d.from} -> ${d.to}`);
    console.error(`${doors.length} imports go around a folder's mod.ts`);
    Deno.exit(1);
  }
}
