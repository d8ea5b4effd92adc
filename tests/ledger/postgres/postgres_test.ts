// PostgreSQL specifics: the table name is quoted as an identifier, values are parameters.
import assert from "node:assert/strict";
import { Ledger, openBackend, parseLedgerUri, type TrackPath } from "../../../src/ledger/mod.ts";
import { dropTable, findPostgres, postgresMissing, withSql } from "../../support/postgres.ts";
import { ignoreWithout } from "../../support/requires.ts";

const pgUrl = await findPostgres();

Deno.test({
  name: "ledger postgres: ?table= names the table exactly, and values never become SQL",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    // Mixed case only survives when the name is quoted as an identifier everywhere.
    const table = `Ledger_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
    const url = new URL(pgUrl!);
    url.searchParams.set("table", table);
    const hostile: TrackPath = { broadcast: ["x'); drop table ledger_objects; --"], track: "$1" };
    try {
      const ledger = new Ledger(await openBackend(parseLedgerUri(url.href)));
      try {
        const track = (await ledger.track(hostile, true))!;
        await track.append({ payload: `"'; select 1; --"`, sender: "o'brien" });
      } finally {
        await ledger.close();
      }
      const rows = await withSql(
        pgUrl!,
        (sql) =>
          sql`select track, seq::int as seq, sender, payload from ${sql(table)} order by seq`,
      );
      assert.deepEqual(rows.map((r) => ({ ...r })), [
        { track: "x'); drop table ledger_objects; --/$1", seq: -1, sender: null, payload: null },
        {
          track: "x'); drop table ledger_objects; --/$1",
          seq: 0,
          sender: "o'brien",
          payload: `"'; select 1; --"`,
        },
      ]);
    } finally {
      await dropTable(pgUrl!, table);
    }
  },
});
