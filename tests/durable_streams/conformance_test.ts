// The Durable Streams conformance suite (npm, 338 tests) against a real
// funnel on each ledger backend: only the explained failures may remain.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { dropTable, findPostgres, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startS3rver } from "../support/s3rver.ts";
import { EXPLAINED_FAILURES, runConformance } from "./_conformance.ts";

const pgUrl = await findPostgres();

async function conformance(label: string, ledgerUri: string, env: Record<string, string> = {}) {
  const funnel = await startFunnel(
    loadFunnelConfig({
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "none",
      LEDGER_URI: ledgerUri,
      ...env,
    }),
    { log: silentLogger },
  );
  try {
    // A test that times out because the machine is busy (the suite runs beside the
    // others) gets two more tries; the figures in docs come from single runs.
    const results = await runConformance(`http://127.0.0.1:${funnel.addr.port}`, label, 2);
    const count = (s: string) => results.filter((r) => r.status === s).length;
    console.log(
      `conformance ${label}: ${count("passed")} passed, ${count("failed")} failed, ` +
        `${count("skipped")} skipped of ${results.length}`,
    );
    const unexplained = results.filter((r) => r.status === "failed" && !EXPLAINED_FAILURES[r.name]);
    for (const r of results.filter((r) => r.status === "failed")) {
      console.log(`  failed: ${r.name} (${EXPLAINED_FAILURES[r.name] ?? r.message})`);
    }
    assert.ok(results.length >= 338, `the suite ran ${results.length} tests`);
    assert.deepEqual(unexplained.map((r) => `${r.name}: ${r.message}`), []);
  } finally {
    await funnel.stop();
  }
}

// Each run spends most of its minute waiting (TTL and long-poll tests), so runs go side
// by side. By default the two durable backends a deployment is likeliest to use run;
// SLUICE_CONFORMANCE_BACKENDS=memory,directory,postgres,s3 picks others.
const chosen = (Deno.env.get("SLUICE_CONFORMANCE_BACKENDS") ?? "directory,postgres").split(",");
const pgIgnored = chosen.includes("postgres") &&
  ignoreWithout("PostgreSQL", postgresMissing(pgUrl));

Deno.test(`Durable Streams conformance against a funnel (${chosen.join(", ")})`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-streams-" });
  const s3 = chosen.includes("s3") ? await startS3rver() : undefined;
  try {
    const runs: Promise<void>[] = [];
    if (chosen.includes("memory")) runs.push(conformance("memory", ""));
    if (chosen.includes("directory")) runs.push(conformance("directory", `file://${dir}`));
    if (s3) {
      runs.push(conformance("s3", s3.ledgerUri(`streams-${crypto.randomUUID()}`), {
        AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
      }));
    }
    if (chosen.includes("postgres") && !pgIgnored) {
      const table = `streams_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
      runs.push(
        conformance("postgres", `${pgUrl}?table=${table}`).finally(() => dropTable(pgUrl!, table)),
      );
    }
    const outcomes = await Promise.allSettled(runs);
    const failures = outcomes.filter((o) => o.status === "rejected");
    if (failures.length > 0) throw (failures[0] as PromiseRejectedResult).reason;
  } finally {
    await s3?.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
