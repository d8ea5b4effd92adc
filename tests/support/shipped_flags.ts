// The permission flags a command ships with, read from deno.json's task of the same name, so
// a test that runs a server "as shipped" cannot drift from what `deno task <name>` grants.

const CONFIG = new URL("../../deno.json", import.meta.url);

/** The `--allow-*` flags of deno.json's task `name` (throws if it grants everything). */
export function shippedFlags(name: "funnel" | "relay"): string[] {
  const json = JSON.parse(Deno.readTextFileSync(CONFIG)) as { tasks: Record<string, string> };
  const task = json.tasks[name];
  if (task === undefined) throw new TypeError(`deno.json has no task "${name}"`);
  const words = task.split(/\s+/);
  const flags = words.filter((w) => w.startsWith("--allow-"));
  if (words.includes("-A") || words.includes("--allow-all") || flags.length === 0) {
    throw new TypeError(`deno.json's task "${name}" does not name its permissions: "${task}"`);
  }
  return flags;
}
