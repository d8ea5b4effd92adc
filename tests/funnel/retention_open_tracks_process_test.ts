// The retention pass opens no track: `sluice funnel` run as shipped (its own process) on a
// directory or PostgreSQL ledger holding many tracks, restarted, runs its pass (which runs even
// with no policy set, for Durable Streams' expiry), and its open-track gauge stays 0 after it, as
// after the start. The tracks a rule trims are trimmed in storage, still without opening them.
// The twin at the default interval is tests/funnel/restore_process_test.ts (gauge 0 after start);
// the pass times with 100,000 tracks come from bench/retention.ts.
import assert from "node:assert/strict";
import { parseLedgerUri } from "../../src/config/mod.ts";
import { Ledger, openBackend } from "../../src/ledger/mod.ts";
import { parseTrackPath } from "../../src/path/mod.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startShippedFunnel } from "../support/shipped_funnel.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { until } from "../support/wait.ts";

/** Stored tracks no policy applies to: many more than a pass should open. */
const TRACKS = 300;
/** Tracks under the `trimmed` rule, three records each. */
const TRIMMED = 20;

/** TRACKS one-record tracks `many/t<i>` and TRIMMED three-record tracks `trimmed/t<i>`. */
async function seed(uri: string): Promise<void> {
  const ledger = new Ledger(await openBackend(parseLedgerUri(uri)));
  try {
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < TRACKS + TRIMMED) {
        const i = next++;
        const name = i < TRACKS ? `many/t${i}` : `trimmed/t${i}`;
        const track = (await ledger.track(parseTrackPath(name), true))!;
        const records = i < TRACKS ? 1 : 3;
        for (let r = 0; r < records; r++) await track.append({ payload: String(r) });
      }
    }));
  } finally {
    await ledger.close();
  }
}

async function metric(base: string, name: string, labels: Record<string, string> = {}) {
  const text = await (await fetch(`${base}/metrics`)).text();
  return sampleValue(families(text), name, labels) ?? 0;
}

async function passScenario(uri: string): Promise<void> {
  await seed(uri);
  const funnel = await startShippedFunnel(uri, {
    env: {
      // The shortest interval (1 s) rather than the default 60 s, so passes run within the test.
      LEDGER_RETENTION_INTERVAL: "1",
      // A rule for one prefix (no default): its tracks are trimmed, the others left alone.
      LEDGER_RETENTION_RULES: "trimmed: count=1",
    },
  });
  try {
    const base = funnel.base;
    assert.ok(base, funnel.process.lines.join("\n"));
    assert.equal(await metric(base, "sluice_funnel_ledger_open_tracks"), 0, "the start opens none");
    // Two passes done: the first of them may have begun before the scrape, the second did not.
    const done = { outcome: "done" };
    await until(
      async () => (await metric(base, "sluice_funnel_retention_passes_total", done)) >= 2,
      "two retention passes",
    );
    // PostgreSQL removes rows; the directory whole segment files, never the tail one: nothing here.
    const backend = uri.startsWith("file:") ? "directory" : "postgres";
    assert.equal(
      await metric(base, "sluice_funnel_retention_removed_records_total", { backend }),
      backend === "postgres" ? TRIMMED * 2 : 0,
      "the rule trimmed its tracks to their newest record",
    );
    assert.equal(await metric(base, "sluice_funnel_ledger_open_tracks"), 0, "the passes open none");
  } finally {
    await funnel.kill();
  }
}

Deno.test("a funnel process's retention pass on a directory ledger opens no stored track", async () => {
  await withTempDir((dir) => passScenario(`file://${dir}/ledger`));
});

const pgUrl = await findPostgres();

Deno.test({
  name: "a funnel process's retention pass on a PostgreSQL ledger opens no stored track",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  fn: async () => {
    const table = freshTableName();
    try {
      await passScenario(`${pgUrl}?table=${table}`);
    } finally {
      await dropTable(pgUrl!, table);
    }
  },
});
