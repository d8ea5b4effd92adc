// Importing the package (or its ./ledger export) must not load the PostgreSQL
// driver or the AWS SDK: openBackend loads them only when such a ledger is
// opened. The check reads deno's own module graph and follows only static,
// runtime edges (dynamic imports and type-only imports are not loaded at
// import time). That openBackend still opens PostgreSQL and S3 ledgers is
// covered by postgres_test.ts and the crash tests, which go through it.
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url);
const DRIVERS = ["npm:/postgres@", "npm:/@aws-sdk/"];

interface Dependency {
  readonly code?: { readonly specifier: string };
  readonly isDynamic?: boolean;
}

interface ModuleGraph {
  readonly roots: readonly string[];
  readonly modules: readonly { specifier: string; dependencies?: Dependency[] }[];
  readonly redirects: Readonly<Record<string, string>>;
}

/** Every module loaded when `path` (relative to the repository) is imported. */
async function staticGraph(path: string): Promise<Set<string>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `--config=${new URL("deno.json", ROOT).pathname}`, path],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const graph: ModuleGraph = JSON.parse(new TextDecoder().decode(output.stdout));
  const resolve = (specifier: string): string => graph.redirects[specifier] ?? specifier;
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const pending = graph.roots.map(resolve);
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dependency of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (dependency.code === undefined || dependency.isDynamic) continue;
      pending.push(resolve(dependency.code.specifier));
    }
  }
  return seen;
}

function driversIn(graph: Set<string>): string[] {
  return [...graph].filter((specifier) => DRIVERS.some((driver) => specifier.startsWith(driver)));
}

Deno.test("the drivers themselves import their npm packages statically", async () => {
  // Shows the graph walk sees npm packages at all, so the checks below can fail.
  assert.equal(driversIn(await staticGraph("src/ledger/postgres/postgres_backend.ts")).length, 1);
  assert.equal(driversIn(await staticGraph("src/ledger/s3/s3_backend.ts")).length, 1);
});

for (const entry of ["src/mod.ts", "src/ledger/mod.ts"]) {
  Deno.test(`importing ${entry} loads neither the PostgreSQL driver nor the AWS SDK`, async () => {
    const graph = await staticGraph(entry);
    assert.ok(
      [...graph].some((specifier) => specifier.endsWith("/src/ledger/open.ts")),
      "openBackend is part of the graph",
    );
    assert.deepEqual(driversIn(graph), []);
  });
}
