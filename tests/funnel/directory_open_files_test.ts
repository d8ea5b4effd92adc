// A funnel on a directory ledger, run as shipped (deno.json's permissions, its own process)
// under `ulimit -n 256`, takes records for many more distinct tracks than it has file
// descriptors: its open files stay bounded, every acknowledged record survives a SIGKILL, and
// a restart on the same directory (which lists the tracks and opens each when first used) starts
// and keeps them bounded too. The full
// 10,000-track figures come from bench/directory_tracks.ts.
import assert from "node:assert/strict";
import { OPEN_TRACKS } from "../../src/ledger/mod.ts";
import { distinctTrack, postDistinctTracks } from "../support/distinct_tracks.ts";
import { openFiles, type ShippedFunnel, startShippedFunnel } from "../support/shipped_funnel.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { fullHistory } from "./_replicas.ts";

const FILE_LIMIT = 256;
/** Eight times the descriptors the process may open. */
const TRACKS = 2000;
/** What a funnel holds besides track files: Deno itself, listeners, connections, the lock. */
const BASELINE_FILES = 64;

function statuses(outcome: Awaited<ReturnType<typeof postDistinctTracks>>): string {
  const all = [...outcome.statuses].map(([s, n]) => `${n}×${s}`).join(", ");
  return `${all}; ${outcome.unanswered} unanswered; first refusal: ${outcome.firstRefusal}`;
}

Deno.test("directory ledger under ulimit -n 256: many more tracks than descriptors, files bounded, nothing lost to SIGKILL, restart bounded", async () => {
  await withTempDir(async (dir) => {
    const ledger = `file://${dir}/ledger`;
    let funnel: ShippedFunnel | undefined;
    try {
      funnel = await startShippedFunnel(ledger, { fileLimit: FILE_LIMIT });
      assert.ok(funnel.base, funnel.process.lines.join("\n"));
      // Twice over: the second round appends to tracks whose files were closed meanwhile.
      for (let round = 0; round < 2; round++) {
        const posted = await postDistinctTracks(funnel.base, 0, TRACKS, 8);
        assert.equal(posted.statuses.get(201), TRACKS, statuses(posted));
      }
      const files = openFiles(funnel.process.child.pid);
      assert.ok(files <= OPEN_TRACKS + BASELINE_FILES, `${files} files open`);
      await funnel.kill();

      funnel = await startShippedFunnel(ledger, { fileLimit: FILE_LIMIT });
      assert.ok(funnel.base, `the restart failed:\n${funnel.process.lines.join("\n")}`);
      console.log(`Restart with ${TRACKS} tracks: listening after ${funnel.startMs.toFixed(0)} ms`);
      const restarted = openFiles(funnel.process.child.pid);
      assert.ok(restarted <= BASELINE_FILES, `${restarted} files open after restart`);
      // Every acknowledged record survived the SIGKILL, in every track.
      for (let i = 0; i < TRACKS; i++) {
        const history = await fullHistory(funnel.base, distinctTrack(i));
        assert.deepEqual(history.map((r) => r.payload), [{ i }, { i }], distinctTrack(i));
      }
      // Old tracks take records again, and new ones still can be made.
      const again = await postDistinctTracks(funnel.base, 0, 20, 4);
      const fresh = await postDistinctTracks(funnel.base, TRACKS, 20, 4);
      assert.equal(again.statuses.get(201), 20, statuses(again));
      assert.equal(fresh.statuses.get(201), 20, statuses(fresh));
    } finally {
      await funnel?.kill();
    }
  });
});

Deno.test("directory ledger out of descriptors: a request that needs a file is answered 503, and the funnel lives on", async () => {
  await withTempDir(async (dir) => {
    // Not the default: LEDGER_OPEN_TRACKS far above the descriptor limit, so tracks alone run
    // the process out of files (at the default they cannot; the test above is its twin).
    const funnel = await startShippedFunnel(`file://${dir}/ledger`, {
      fileLimit: FILE_LIMIT,
      env: { LEDGER_OPEN_TRACKS: "100000" },
    });
    try {
      assert.ok(funnel.base, funnel.process.lines.join("\n"));
      const posted = await postDistinctTracks(funnel.base, 0, 2 * FILE_LIMIT, 4);
      const ok = posted.statuses.get(201) ?? 0;
      assert.ok(ok > 0 && ok < 2 * FILE_LIMIT, statuses(posted));
      assert.equal(posted.unanswered, 0, statuses(posted));
      assert.equal(ok + (posted.statuses.get(503) ?? 0), 2 * FILE_LIMIT, statuses(posted));
      assert.match(posted.firstRefusal ?? "", /^503 .*ledger is unavailable/);
      // Still alive (a new connection would need a descriptor too, so none is tried).
      let exited = false;
      funnel.process.child.status.then(() => (exited = true));
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(!exited, funnel.process.lines.join("\n"));
    } finally {
      await funnel.kill();
    }
  });
});
