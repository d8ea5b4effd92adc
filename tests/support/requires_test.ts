// The CI gate of ./requires.ts, seen from outside: a PostgreSQL-backed test
// file run as a child `deno test` against a port where nothing listens.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const NOBODY = "postgres://postgres@127.0.0.1:1/test";

/** Runs tests/ledger/postgres/postgres_test.ts with no PostgreSQL reachable; CI set to `ci` or unset. */
async function runWithoutPostgres(ci: string | undefined): Promise<{ code: number; out: string }> {
  const env = Deno.env.toObject();
  delete env.CI;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "-A",
      "--no-check",
      `--config=${ROOT}deno.json`,
      "tests/ledger/postgres/postgres_test.ts",
    ],
    cwd: ROOT,
    clearEnv: true,
    env: {
      ...env,
      ...(ci === undefined ? {} : { CI: ci }),
      SLUICE_TEST_PG_URL: NOBODY,
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code, out: text.decode(stdout) + text.decode(stderr) };
}

Deno.test("with CI=true a missing PostgreSQL fails the run and names it; without CI it skips", async () => {
  const [ci, local] = await Promise.all([
    runWithoutPostgres("true"),
    runWithoutPostgres(undefined),
  ]);

  assert.notEqual(ci.code, 0, ci.out);
  assert.match(ci.out, /PostgreSQL is available \(CI=true\) \.\.\. FAILED/);
  assert.match(
    ci.out,
    /PostgreSQL is missing \(no server answers at postgres:\/\/postgres@127\.0\.0\.1:1\/test\)/,
  );
  assert.match(ci.out, /ledger postgres: .* \.\.\. ignored/);

  assert.equal(local.code, 0, local.out);
  assert.match(local.out, /ledger postgres: .* \.\.\. ignored/);
  assert.doesNotMatch(local.out, /is available \(CI=true\)/);
});
