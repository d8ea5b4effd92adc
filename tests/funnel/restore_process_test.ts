// A restart opens no stored track: `sluice funnel` run as shipped (its own process) on a directory
// or PostgreSQL ledger holding many tracks lists them, announces their broadcasts on its own
// listener and through its relay session, and opens none (the ledger's open-track gauge says so).
// A subscriber to a track stored before the restart still starts at its newest record and gets
// the live ones after it, on the listener and through the relay; only the tracks used are then
// open. The figures with 100,000 tracks come from bench/restart.ts.
import assert from "node:assert/strict";
import { parseLedgerUri } from "../../src/config/mod.ts";
import { Ledger, openBackend } from "../../src/ledger/mod.ts";
import { parseTrackPath } from "../../src/path/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { post, take } from "../support/live_funnel.ts";
import { announcedPaths, dialOurs, seeAnnounced } from "../support/moq.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ingestBase, startServer } from "../support/processes.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { ignoreWithout } from "../support/requires.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { within } from "../support/wait.ts";

/** Stored tracks besides the one subscribed to: many more than a start should open. */
const TRACKS = 300;

/** `room/1/chat` with records 1, 2, 3, and TRACKS one-record tracks `many/t<i>`. */
async function seed(uri: string): Promise<void> {
  const ledger = new Ledger(await openBackend(parseLedgerUri(uri)));
  try {
    const chat = (await ledger.track(parseTrackPath("room/1/chat"), true))!;
    for (const body of ["1", "2", "3"]) await chat.append({ payload: body });
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < TRACKS) {
        const i = next++;
        const track = await ledger.track(parseTrackPath(`many/t${i}`), true);
        await track!.append({ payload: String(i) });
      }
    }));
  } finally {
    await ledger.close();
  }
}

async function openTracks(base: string): Promise<number | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return sampleValue(families(text), "sluice_funnel_ledger_open_tracks");
}

async function restartScenario(uri: string): Promise<void> {
  await seed(uri);
  const files = await testCertificateFiles();
  const relay = await startTestRelay();
  try {
    await using funnel = await startServer("funnel", {
      env: {
        FUNNEL_ADDR: "127.0.0.1:0",
        FUNNEL_SERVE_ADDR: "127.0.0.1:0",
        CERT_FILE: files.cert,
        KEY_FILE: files.key,
        RELAY_URL: `moqt://localhost:${relay.port}/`,
        RELAY_CA_FILE: files.cert,
        LEDGER_URI: uri,
      },
    });
    const base = ingestBase(funnel);
    assert.equal(await openTracks(base), 0, "the start opened no stored track");
    const port = Number(/^Serve: moqt:\/\/\S+:(\d+) /.exec(funnel.line(/^Serve: /) ?? "")?.[1]);
    assert.ok(port > 0, funnel.lines.join("\n"));
    const moq = await dialOurs(port);
    const viaRelay = await dialOurs(relay.port);
    try {
      const seen = await announcedPaths(moq, 2);
      assert.deepEqual([...seen].sort(), ["many", "room/1"], "every stored broadcast announced");
      const chat = moq.subscribe("room/1", "chat");
      assert.deepEqual(await take(chat, 1), [{ seq: 3, frame: '{"payload":3}' }]);
      assert.equal((await post(base, "room/1/chat", "4")).status, 201);
      assert.deepEqual(await take(chat, 1), [{ seq: 4, frame: '{"payload":4}' }]);
      await assert.rejects(moq.subscribe("many", "never").ready);
      // Through the relay: the funnel's session announced the stored broadcasts.
      await within(seeAnnounced(viaRelay, "many"), 10_000, "many announced at the relay");
      const other = viaRelay.subscribe("many", "t7");
      assert.deepEqual(await take(other, 1), [{ seq: 1, frame: '{"payload":7}' }]);
      assert.equal((await post(base, "many/t7", "70")).status, 201);
      assert.deepEqual(await take(other, 1), [{ seq: 2, frame: '{"payload":70}' }]);
      assert.equal(await openTracks(base), 2, "only the tracks used are open");
    } finally {
      moq.close(0, "");
      viaRelay.close(0, "");
    }
  } finally {
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
}

Deno.test("a restarted funnel process on a directory ledger opens no stored track, and a subscriber to one gets its newest record, then live ones, on its listener and through its relay", async () => {
  await withTempDir((dir) => restartScenario(`file://${dir}/ledger`));
});

const pgUrl = await findPostgres();

Deno.test({
  name:
    "a restarted funnel process on a PostgreSQL ledger opens no stored track, and a subscriber to one gets its newest record, then live ones, on its listener and through its relay",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  fn: async () => {
    const table = freshTableName();
    try {
      await restartScenario(`${pgUrl}?table=${table}`);
    } finally {
      await dropTable(pgUrl!, table);
    }
  },
});
