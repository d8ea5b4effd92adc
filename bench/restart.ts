/**
 * A funnel's restart with many stored tracks: N tracks of one record each are seeded straight
 * into a directory or PostgreSQL ledger (through the ledger, in process, many at once: far
 * quicker than N POSTs), then a `sluice funnel` process run as shipped (deno.json's permissions)
 * is started on it R times: time from spawn to its startup summary (listening), its open files
 * and resident memory at that moment, the ledger's open tracks (`sluice_funnel_ledger_open_tracks`),
 * and whether a track stored before answers its newest record. The listing of the store (what a
 * start reads of it) is timed in process too.
 *
 *   deno run -A bench/restart.ts [--backends directory,postgres] [--tracks 100000]
 *     [--broadcasts 1] [--restarts 3] [--cli PATH,...] [--keep DIR]
 *
 * `--cli` starts the funnel of each `src/cli.ts` given in turn (default this checkout's), each
 * from its checkout's root, on the same seeded ledger, so a before/after comes from one run.
 * `--keep DIR` seeds the directory ledger under DIR and the PostgreSQL table `restart_bench_<N>`
 * once and leaves them for the next run (which then seeds nothing).
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { benchArgs } from "./support/args.ts";
import { Ledger, type LedgerBackend, openBackend } from "../src/ledger/mod.ts";
import { parseLedgerUri } from "../src/config/mod.ts";
import { parseTrackPath } from "../src/path/mod.ts";
import {
  openFiles,
  residentMiB,
  type ShippedFunnel,
  startShippedFunnel,
} from "../tests/support/shipped_funnel.ts";
import { dropTable, findPostgres } from "../tests/support/postgres.ts";

const { values } = benchArgs({
  backends: { type: "string", default: "directory,postgres" },
  tracks: { type: "string", default: "100000" },
  broadcasts: { type: "string", default: "1" },
  restarts: { type: "string", default: "3" },
  cli: { type: "string", default: new URL("../src/cli.ts", import.meta.url).pathname },
  keep: { type: "string" },
});
const tracks = Number(values.tracks);
const broadcasts = Number(values.broadcasts);
const restarts = Number(values.restarts);

/** Track `i`: `restart/t<i>`, or `restart/b<i mod B>/t<i>` over B broadcasts. */
function trackName(i: number): string {
  return broadcasts > 1 ? `restart/b${i % broadcasts}/t${i}` : `restart/t${i}`;
}

/** One record into each of the tracks the ledger lacks, 64 tracks at a time. */
async function seed(backend: LedgerBackend): Promise<void> {
  const ledger = new Ledger(backend, { deadlineMs: 0 });
  try {
    const listing = performance.now();
    const have = (await ledger.tracks()).length;
    const listMs = performance.now() - listing;
    // The one pass a start makes over the store, in process.
    console.log(`  listed ${have} tracks in ${listMs.toFixed(0)} ms`);
    if (have >= tracks) return;
    const started = performance.now();
    let next = have;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next < tracks) {
        const i = next++;
        const track = await ledger.track(parseTrackPath(trackName(i)), true);
        await track!.append({ payload: JSON.stringify({ i }) });
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    console.log(`  seeded ${tracks - have} tracks in ${seconds.toFixed(1)} s`);
  } finally {
    await ledger.close();
  }
}

/** The value of `sluice_funnel_ledger_open_tracks` on the funnel's /metrics. */
async function openTracks(base: string): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return /^sluice_funnel_ledger_open_tracks(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? "?";
}

function lastLines(funnel: ShippedFunnel): string {
  return funnel.process.lines.filter((l) => l.trim()).slice(-2).join(" | ").slice(0, 300);
}

async function restartRounds(uri: string): Promise<void> {
  for (const cli of values.cli.split(",")) {
    const root = resolve(dirname(cli), "..");
    console.log(`  ${cli}:`);
    for (let round = 0; round < restarts; round++) {
      // A start that opens every track may take minutes on a loaded machine.
      const funnel = await startShippedFunnel(uri, { cli, cwd: root, readyMs: 600_000 });
      try {
        if (!funnel.base) {
          console.log(
            `    did not start after ${funnel.startMs.toFixed(0)} ms: ${lastLines(funnel)}`,
          );
          break;
        }
        const pid = funnel.process.child.pid;
        // Read at once, before anything else runs in it.
        const files = openFiles(pid);
        const rss = residentMiB(pid);
        const open = await openTracks(funnel.base);
        const last = trackName(tracks - 1);
        const read = performance.now();
        const page = await fetch(`${funnel.base}/tracks/${last}?limit=1`);
        const body = await page.text();
        const readMs = performance.now() - read;
        console.log(
          `    listening after ${funnel.startMs.toFixed(0)} ms, ${files} open files, ` +
            `${rss.toFixed(0)} MiB RSS, ${open} open tracks; GET ${last}: ${page.status} ` +
            `in ${readMs.toFixed(0)} ms${page.status === 200 ? "" : ` ${body.slice(0, 120)}`}`,
        );
      } finally {
        await funnel.kill();
      }
    }
  }
}

const pgUrl = values.backends.includes("postgres") ? await findPostgres() : undefined;
for (const name of values.backends.split(",")) {
  console.log(`\n${name}: ${tracks} tracks over ${broadcasts} broadcast(s)`);
  let uri: string;
  let cleanup: () => Promise<void>;
  if (name === "directory") {
    const dir = values.keep
      ? `${values.keep}/directory-${tracks}-${broadcasts}`
      : await Deno.makeTempDir({ prefix: "sluice-bench-restart-" });
    uri = `file://${dir}`;
    cleanup = () => values.keep ? Promise.resolve() : Deno.remove(dir, { recursive: true });
  } else if (name === "postgres") {
    if (!pgUrl) continue;
    const table = `restart_bench_${tracks}_${broadcasts}`;
    uri = `${pgUrl}?table=${table}`;
    cleanup = () => values.keep ? Promise.resolve() : dropTable(pgUrl, table);
  } else {
    throw new TypeError(`Unknown backend "${name}": directory or postgres`);
  }
  try {
    await seed(await openBackend(parseLedgerUri(uri)));
    await restartRounds(uri);
  } finally {
    await cleanup();
  }
}
