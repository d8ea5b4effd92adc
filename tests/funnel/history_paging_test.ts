// Reading a track's history forward, page by page, reaches every committed record even when
// this funnel's memory of the track's newest record lags behind storage. Two funnels share one
// PostgreSQL table; one of them hears none of the other's commit notices, as when its LISTEN
// connection is cut or stalled and the loss goes unnoticed (what the chaos campaign's pg-pair
// runs hit). Its history used to end at a page boundary: a full page without an `after` cursor,
// because the cursor came from that lagging memory instead of from storage.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import { type LedgerBackend, openBackend } from "../../src/ledger/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startTestFunnel } from "./_http.ts";
import { fullHistory } from "./_replicas.ts";

const pgUrl = await findPostgres();
const TRACK = "room/1/chat";
/** More than one page of 200, so the read has to follow an `after` cursor past the first. */
const RECORDS = 250;

Deno.test({
  name: "history read forward through a funnel that missed the other's commit notices is whole",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  fn: async () => {
    const table = freshTableName();
    const env = { LEDGER_URI: `${pgUrl}?table=${table}` };
    await using writer = await startTestFunnel(env);
    const config = loadFunnelConfig({
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "none",
      ...env,
    });
    const real = await openBackend(config.ledger);
    // Listens, but every notice is lost.
    const deaf: LedgerBackend = {
      name: real.name,
      listTracks: () => real.listTracks(),
      openTrack: (path, create) => real.openTrack(path, create),
      close: () => real.close(),
      abandon: () => real.abandon?.(),
      follow: () => Promise.resolve(() => Promise.resolve()),
    };
    const reader = await startFunnel(config, { backend: deaf, log: silentLogger });
    const base = `http://127.0.0.1:${reader.addr.port}`;
    try {
      assert.equal((await fetch(`${writer.base}/tracks/${TRACK}`, { method: "PUT" })).status, 201);
      // The reader opens the track while it is empty.
      const empty = await fetch(`${base}/tracks/${TRACK}?after=e000000-g00000000`);
      assert.deepEqual(await empty.json(), { records: [] });
      for (let i = 0; i < RECORDS; i++) {
        const r = await fetch(`${writer.base}/tracks/${TRACK}`, {
          method: "POST",
          body: JSON.stringify({ i }),
          headers: { "content-type": "application/json" },
        });
        assert.equal(r.status, 201, await r.text());
      }
      const history = await fullHistory(base, TRACK);
      assert.deepEqual(
        history.map((r) => r.payload),
        Array.from({ length: RECORDS }, (_, i) => ({ i })),
      );
      // The writer's history agrees, and ends where it should: no cursor past the last record.
      assert.equal((await fullHistory(writer.base, TRACK)).length, RECORDS);
    } finally {
      await reader.stop();
      await dropTable(pgUrl!, table);
    }
  },
});
