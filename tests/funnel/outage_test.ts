// The real funnel over a real PostgreSQL / S3 that goes away: requests answer 503
// problem+json while it is away, and the funnel recovers by itself when it returns.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import type { LedgerBackend } from "../../src/ledger/mod.ts";
import { loadPostgresBackend } from "../../src/ledger/mod.ts";
import { loadS3Backend } from "../../src/ledger/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startS3rver } from "../support/s3rver.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp_proxy.ts";

const pgUrl = await findPostgres();

async function call(
  url: string,
  method: string,
  body?: string,
): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
  });
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    text: await response.text(),
  };
}

async function outage(proxy: TcpProxy, backend: LedgerBackend): Promise<void> {
  const funnel = await startFunnel(
    loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" }),
    { backend, log: silentLogger },
  );
  const track = `http://127.0.0.1:${funnel.addr.port}/tracks/outage/room/chat`;
  try {
    assert.equal((await call(track, "POST", `"before"`)).status, 201);
    proxy.cut();
    const down = await call(track, "POST", `"during"`);
    assert.equal(down.status, 503);
    assert.equal(down.type, "application/problem+json");
    const problem = JSON.parse(down.text);
    assert.equal(problem.status, 503);
    assert.equal(typeof problem.detail, "string");
    assert.equal((await call(track, "GET")).status, 503);
    proxy.restore();
    const back = await call(track, "POST", `"after"`);
    assert.equal(back.status, 201, back.text);
    assert.equal(JSON.parse(back.text).group, "e000001-g00000001");
    const history = JSON.parse((await call(track, "GET")).text);
    assert.deepEqual(history.records.map((r: { payload: string }) => r.payload), [
      "before",
      "after",
    ]);
  } finally {
    await funnel.stop();
  }
}

Deno.test({
  name: "funnel over PostgreSQL: database away answers 503, then recovers by itself",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const target = new URL(pgUrl!);
    const proxy = startTcpProxy(target.hostname, Number(target.port || 5432));
    const url = new URL(pgUrl!);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    const table = freshTableName();
    try {
      await outage(
        proxy,
        await (await loadPostgresBackend()).PostgresBackend.open(url.href, table, {
          connectTimeout: 2,
        }),
      );
    } finally {
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});

Deno.test("funnel over S3: object store away answers 503, then recovers by itself", async () => {
  const s3 = await startS3rver();
  const proxy = startTcpProxy("127.0.0.1", Number(new URL(s3.endpoint).port));
  try {
    const backend = await (await loadS3Backend()).S3Backend.open({
      bucket: s3.bucket,
      prefix: "outage",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${proxy.port}`,
      credentials: s3.credentials,
    });
    await outage(proxy, backend);
  } finally {
    await proxy.close();
    await s3.stop();
  }
});
