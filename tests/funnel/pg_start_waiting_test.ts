// A `sluice funnel` process (shipped permissions) started while its PostgreSQL does not
// answer (a stall behind a TCP proxy, as when a funnel restarts during a database hang)
// starts anyway: /health says 503 "starting", POSTs answer 503, and once the database
// answers the funnel gets ready by itself and takes the track on where it was.
import assert from "node:assert/strict";
import { Ledger, loadPostgresBackend, type TrackPath } from "../../src/ledger/mod.ts";
import { sleep } from "../../src/timers/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import {
  dropTable,
  findPostgres,
  freshTableName,
  postgresMissing,
  proxiedPostgres,
} from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { shippedFlags } from "../support/shipped_flags.ts";
import { until } from "../support/wait.ts";
import { fullHistory, startFunnelProcess } from "./_replicas.ts";

const pgUrl = await findPostgres();
const TRACK: TrackPath = { broadcast: ["wait", "room"], track: "chat" };

async function health(base: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${base}/health`);
  return { status: r.status, body: await r.json() };
}

async function post(base: string, payload: string): Promise<{ status: number; group?: string }> {
  const r = await fetch(`${base}/tracks/wait/room/chat`, {
    method: "POST",
    body: JSON.stringify(payload),
    headers: { "content-type": "application/json" },
  });
  const body = await r.text();
  return r.status === 201
    ? { status: 201, group: (JSON.parse(body) as { group: string }).group }
    : { status: r.status };
}

Deno.test({
  name: "a funnel process started while PostgreSQL hangs waits for it instead of exiting",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const { proxy, url: ledger } = proxiedPostgres(pgUrl!);
    const table = freshTableName();
    ledger.searchParams.set("table", table);
    const files = await testCertificateFiles();
    // A track with one record, written before the funnel starts.
    const { PostgresBackend } = await loadPostgresBackend();
    const direct = new Ledger(await PostgresBackend.open(pgUrl!, table));
    await (await direct.track(TRACK, true))!.append({ payload: JSON.stringify("before") });
    await direct.close();
    proxy.stall();
    let funnel;
    try {
      funnel = await startFunnelProcess(ledger.href, undefined, files, {
        FUNNEL_SERVE_ADDR: "none",
      }, shippedFlags("funnel"));
      const waiting = await health(funnel.base);
      assert.equal(waiting.status, 503);
      assert.equal(waiting.body.status, "starting");
      assert.equal(waiting.body.ledger, "postgres");
      assert.equal((await post(funnel.base, "while away")).status, 503);
      proxy.restore();
      const base = funnel.base;
      await until(async () => (await sleep(100), (await health(base)).status === 200), "ready");
      assert.equal((await health(funnel.base)).body.status, "ok");
      const after = await post(funnel.base, "after");
      assert.deepEqual(after, { status: 201, group: "e000001-g00000001" });
      const history = await fullHistory(funnel.base, "wait/room/chat");
      assert.deepEqual(history.map((r) => r.payload), ["before", "after"]);
      assert.ok(
        funnel.process.lines.some((l) => l.includes("starting anyway")),
        funnel.process.lines.join("\n"),
      );
    } finally {
      await funnel?.kill();
      await proxy.close();
      await Deno.remove(files.dir, { recursive: true });
      await dropTable(pgUrl!, table);
    }
  },
});
