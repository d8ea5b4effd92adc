// Run by deploy/Dockerfile in its build stage, in a copy of the repository root: narrows deno.json
// and deno.lock to what src/ uses, so the image holds only those npm packages. The manifest loses
// its workspace members (the tests' packages); the lock keeps the pinned versions and integrity
// hashes of the manifest's own imports and of everything they depend on, and nothing else (a lock
// also records the packages that tools and tests import by npm: specifier). Also writes
// /tmp/deps.ts, which imports each of them, for `deno cache`.
//
//   deno run --no-config --allow-read=. --allow-write=.,/tmp image_manifest.ts

interface Lock {
  version: string;
  specifiers?: Record<string, string>;
  npm?: Record<string, { dependencies?: string[] } & Record<string, unknown>>;
  workspace?: { dependencies?: string[]; members?: unknown };
  [key: string]: unknown;
}

const manifest = JSON.parse(await Deno.readTextFile("deno.json"));
const lock: Lock = JSON.parse(await Deno.readTextFile("deno.lock"));
delete manifest.workspace;

// "npm:/hono@^4/" (a subpath prefix) and "npm:hono@^4" name the same requirement.
const imports = Object.entries(manifest.imports as Record<string, string>);
const wanted = new Set(
  imports.filter(([, v]) => v.startsWith("npm:")).map(([, v]) =>
    "npm:" + v.slice(4).replace(/^\//, "").replace(/\/$/, "")
  ),
);

const npm = lock.npm ?? {};
const keys = Object.keys(npm);
// A dependency is "name" (one version in the lock) or "name@version[_peers]".
const packageKey = (dep: string): string | undefined => {
  if (dep in npm) return dep;
  const name = dep.replace(/^(@?[^@]+)@.*$/, "$1");
  return keys.find((k) => k.startsWith(`${name}@`) && (dep === name || k.startsWith(dep)));
};

const specifiers: Record<string, string> = {};
const reached = new Set<string>();
const todo: string[] = [];
for (const [specifier, resolved] of Object.entries(lock.specifiers ?? {})) {
  if (!wanted.has(specifier)) continue;
  specifiers[specifier] = resolved;
  const key = packageKey(`${specifier.slice(4).replace(/@[^@]*$/, "")}@${resolved}`);
  if (key) todo.push(key);
}
for (let key = todo.pop(); key !== undefined; key = todo.pop()) {
  if (reached.has(key)) continue;
  reached.add(key);
  for (const dep of npm[key]?.dependencies ?? []) {
    const k = packageKey(dep);
    if (k && !reached.has(k)) todo.push(k);
  }
}

lock.specifiers = specifiers;
lock.npm = Object.fromEntries(Object.entries(npm).filter(([k]) => reached.has(k)));
if (lock.workspace) delete lock.workspace.members;

await Deno.writeTextFile("deno.json", JSON.stringify(manifest, null, 2) + "\n");
await Deno.writeTextFile("deno.lock", JSON.stringify(lock, null, 2) + "\n");
await Deno.writeTextFile(
  "/tmp/deps.ts",
  imports.filter(([k]) => !k.endsWith("/")).map(([k]) => `import "${k}";\n`).join(""),
);
console.log(`image manifest: ${reached.size} npm packages of ${keys.length} in the lock`);
