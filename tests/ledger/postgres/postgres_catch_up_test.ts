// A funnel catching up on another funnel's commit reads it on a pooled connection; one that
// died without closing (open across a database hang) must not hold the catch-up for the
// whole 5 s storage deadline: the read is bounded, the connections dropped, and it is read
// again at once. Real PostgreSQL, shipped defaults, connections hung by a TCP proxy.
import assert from "node:assert/strict";
import { FOLLOW_READ_DEADLINE_MS, Ledger, type TrackPath } from "../../../src/ledger/mod.ts";
import { PostgresBackend } from "../../../src/ledger/postgres/postgres_backend.ts";
import {
  dropTable,
  findPostgres,
  freshTableName,
  postgresMissing,
  proxiedPostgres,
} from "../../support/postgres.ts";
import { ignoreWithout } from "../../support/requires.ts";
import { until } from "../../support/wait.ts";

const pgUrl = await findPostgres();
const T1: TrackPath = { broadcast: ["room"], track: "one" };

Deno.test({
  name: "ledger postgres: a catch-up read on a dead pooled connection is retried within about 1 s",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const table = freshTableName();
    const { proxy, url: proxied } = proxiedPostgres(pgUrl!);
    const published: string[] = [];
    const follower = new Ledger(await PostgresBackend.open(proxied.href, table));
    follower.commits.subscribe({
      committed: (_path, entries) => void published.push(...entries.map((e) => e.payload!)),
    });
    const writer = new Ledger(await PostgresBackend.open(pgUrl!, table));
    try {
      const one = (await writer.track(T1, true))!;
      await one.append({ payload: `"1a"` });
      await follower.track(T1, false);
      // The follower's pooled connections now never answer again, nor close; new ones work,
      // so the LISTEN made now hears the next commit, and its catch-up read meets a dead one.
      proxy.stall();
      proxy.restore();
      await follower.follow();
      const start = performance.now();
      await one.append({ payload: `"1b"` });
      await until(() => published.length === 1, "the follower to catch up");
      const took = performance.now() - start;
      assert.deepEqual(published, [`"1b"`]);
      // Before the bound it took the storage deadline and the retry wait: over 6 s.
      assert.ok(
        took < FOLLOW_READ_DEADLINE_MS + 3_000,
        `caught up after ${Math.round(took)} ms`,
      );
    } finally {
      await writer.close();
      await follower.close();
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});
