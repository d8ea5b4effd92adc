// A backend that goes away answers LedgerError("unavailable") and works again when it returns.
import assert from "node:assert/strict";
import { Ledger, type LedgerBackend, LedgerError, type TrackPath } from "../../src/ledger/mod.ts";
import { PostgresBackend } from "../../src/ledger/postgres/postgres_backend.ts";
import { S3Backend } from "../../src/ledger/s3/s3_backend.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startS3rver } from "../support/s3rver.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp_proxy.ts";

const PATH: TrackPath = { broadcast: ["down"], track: "up" };
const pgUrl = await findPostgres();

function isUnavailable(error: unknown): boolean {
  return error instanceof LedgerError && error.code === "unavailable";
}

async function outageAndRecovery(proxy: TcpProxy, backend: LedgerBackend): Promise<void> {
  const ledger = new Ledger(backend);
  try {
    const track = (await ledger.track(PATH, true))!;
    assert.equal((await track.append({ payload: "1" })).seq, 0);

    proxy.cut();
    await assert.rejects(track.append({ payload: "2" }), isUnavailable);
    await assert.rejects(track.backend.readBefore(undefined, 10), isUnavailable);
    await assert.rejects(ledger.tracks(), isUnavailable);

    proxy.restore();
    // The backend reconnects by itself; numbering continues from what is really stored.
    const next = await track.append({ payload: "3" });
    assert.equal(next.seq, 1);
    const stored = await track.backend.readBefore(undefined, 10);
    assert.deepEqual(stored.map((e) => e.payload), ["3", "1"]);
  } finally {
    await ledger.close();
  }
}

Deno.test({
  name: "ledger postgres: server away is unavailable, and it recovers when it returns",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const target = new URL(pgUrl!);
    const proxy = startTcpProxy(target.hostname, Number(target.port || 5432));
    const table = freshTableName();
    const url = new URL(pgUrl!);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    try {
      await outageAndRecovery(
        proxy,
        await PostgresBackend.open(url.href, table, { connectTimeout: 2 }),
      );
      proxy.cut();
      await assert.rejects(
        PostgresBackend.open(url.href, table, { connectTimeout: 2 }),
        isUnavailable,
      );
    } finally {
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});

Deno.test("ledger s3: object store away is unavailable, and it recovers when it returns", async () => {
  const s3 = await startS3rver();
  const proxy = startTcpProxy("127.0.0.1", Number(new URL(s3.endpoint).port));
  const options = {
    bucket: s3.bucket,
    prefix: "p",
    region: "us-east-1",
    endpoint: `http://127.0.0.1:${proxy.port}`,
    credentials: s3.credentials,
  };
  try {
    await outageAndRecovery(proxy, await S3Backend.open(options));
    proxy.cut();
    await assert.rejects(S3Backend.open(options), isUnavailable);
  } finally {
    await proxy.close();
    await s3.stop();
  }
});
