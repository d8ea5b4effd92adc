import { fileURLToPath } from "node:url";

/**
 * Bundles a demo page's script for the browser, with code splitting (so
 * the client's Deno-only transports land in a chunk the browser never
 * loads): every output file by name.
 */
export async function bundlePage(entry: string): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  const outdir = await Deno.makeTempDir({ prefix: "sluice-demo-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        // The repository's import map, whatever the working directory (the client reaches npm
        // packages through it, e.g. jose for reading its credential's scopes).
        "--config",
        fileURLToPath(new URL("../deno.json", import.meta.url)),
        "--platform",
        "browser",
        "--format",
        "esm",
        "--code-splitting",
        "--outdir",
        outdir,
        entry,
      ],
      stdout: "inherit",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`Cannot bundle the page: ${new TextDecoder().decode(out.stderr)}`);
    }
    const files = new Map<string, Uint8Array<ArrayBuffer>>();
    for await (const entry of Deno.readDir(outdir)) {
      if (entry.isFile) files.set(entry.name, await Deno.readFile(`${outdir}/${entry.name}`));
    }
    return files;
  } finally {
    await Deno.remove(outdir, { recursive: true });
  }
}
