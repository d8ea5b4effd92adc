/**
 * Many tracks on a directory ledger: a `sluice funnel` process run as shipped (deno.json's
 * permissions) under `ulimit -n`, one record POSTed to each of N distinct tracks; then its
 * open files and resident memory, a SIGKILL and a restart on the same directory, and the
 * restart's time to listening, open files and memory.
 *
 *   deno run -A bench/directory_tracks.ts [--tracks 10000] [--concurrency 16]
 *     [--file-limit 256] [--restarts 3] [--cli PATH,...]
 *
 * `--cli` runs the funnel of each `src/cli.ts` given in turn (default this checkout's), each
 * from its checkout's root, so a before/after comes from one run.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { benchArgs } from "./support/args.ts";
import { distinctTrack, postDistinctTracks } from "../tests/support/distinct_tracks.ts";
import {
  openFiles,
  residentMiB,
  type ShippedFunnel,
  startShippedFunnel,
} from "../tests/support/shipped_funnel.ts";

const { values } = benchArgs({
  tracks: { type: "string", default: "10000" },
  concurrency: { type: "string", default: "16" },
  "file-limit": { type: "string", default: "256" },
  restarts: { type: "string", default: "3" },
  cli: { type: "string", default: new URL("../src/cli.ts", import.meta.url).pathname },
});
const tracks = Number(values.tracks);
const concurrency = Number(values.concurrency);
const fileLimit = Number(values["file-limit"]);
const restarts = Number(values.restarts);

function alive(funnel: ShippedFunnel): boolean {
  try {
    openFiles(funnel.process.child.pid);
    return true;
  } catch {
    return false;
  }
}

function lastLines(funnel: ShippedFunnel): string {
  return funnel.process.lines.filter((l) => l.trim()).slice(-2).join(" | ").slice(0, 300);
}

for (const cli of values.cli.split(",")) {
  const root = resolve(dirname(cli), "..");
  const dir = await Deno.makeTempDir({ prefix: "sluice-bench-tracks-" });
  const ledger = `file://${dir}/ledger`;
  const options = { fileLimit, cli, cwd: root };
  console.log(`\n${cli}: ${tracks} tracks, ${concurrency} connections, ulimit -n ${fileLimit}`);
  try {
    const first = await startShippedFunnel(ledger, options);
    if (!first.base) {
      console.log(`  did not start: ${lastLines(first)}`);
      continue;
    }
    const started = performance.now();
    const posted = await postDistinctTracks(first.base, 0, tracks, concurrency);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  POSTs: ${[...posted.statuses].map(([s, n]) => `${n}×${s}`).join(", ")}` +
        `${posted.unanswered ? `, ${posted.unanswered} connections unanswered` : ""}` +
        ` in ${seconds.toFixed(1)} s${
          posted.firstRefusal ? ` (first: ${posted.firstRefusal.slice(0, 160)})` : ""
        }`,
    );
    if (alive(first)) {
      const pid = first.process.child.pid;
      console.log(`  after: ${openFiles(pid)} open files, ${residentMiB(pid).toFixed(0)} MiB RSS`);
    } else {
      console.log(`  the funnel died: ${lastLines(first)}`);
    }
    await first.kill();

    let second: ShippedFunnel | undefined;
    for (let round = 0; round < restarts; round++) {
      await second?.kill();
      second = await startShippedFunnel(ledger, options);
      if (!second.base) break;
      const pid = second.process.child.pid;
      console.log(
        `  restart: listening after ${second.startMs.toFixed(0)} ms, ${openFiles(pid)} open ` +
          `files, ${residentMiB(pid).toFixed(0)} MiB RSS`,
      );
    }
    if (!second?.base) {
      console.log(`  restart failed after ${second?.startMs.toFixed(0)} ms: ${lastLines(second!)}`);
      await second?.kill();
      continue;
    }
    const again = await postDistinctTracks(second.base, 0, 1, 1);
    const fresh = await postDistinctTracks(second.base, tracks, 1, 1);
    console.log(
      `  then: POST to ${distinctTrack(0)} ${[...again.statuses.keys()]}, ` +
        `to a new track ${[...fresh.statuses.keys()]}`,
    );
    await second.kill();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
