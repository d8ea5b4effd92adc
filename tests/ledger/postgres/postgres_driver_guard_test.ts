// The driver's write on a connection that closed inside a transaction (postgres.js 3.4.9:
// a TypeError thrown from a timer, which no caller can catch) must not end a process with a
// PostgreSQL ledger open: the backend replaces its pool and goes on. Nor must a connection
// failure of a promise the driver keeps to itself (an unhandled rejection). Other errors
// stay fatal.
import assert from "node:assert/strict";
import postgres from "postgres";
import { Ledger, type TrackPath } from "../../../src/ledger/mod.ts";
import {
  isDriverConnectionError,
  isDriverWriteFault,
} from "../../../src/ledger/postgres/driver_guard.ts";
import { PostgresBackend } from "../../../src/ledger/postgres/postgres_backend.ts";
import { sleep } from "../../../src/timers/mod.ts";
import {
  dropTable,
  findPostgres,
  freshTableName,
  postgresMissing,
  proxiedPostgres,
} from "../../support/postgres.ts";
import { ignoreWithout } from "../../support/requires.ts";

const pgUrl = await findPostgres();
const TRACK: TrackPath = { broadcast: ["room"], track: "guarded" };

Deno.test("isDriverWriteFault takes the driver's null-socket write only", () => {
  const fault = new TypeError("Cannot read properties of null (reading 'write')");
  fault.stack = `${fault.message}\n    at Immediate.nextWrite ` +
    "(file:///cache/npm/registry.npmjs.org/postgres/3.4.9/src/connection.js:255:22)";
  assert.equal(isDriverWriteFault(fault), true);
  const elsewhere = new TypeError(fault.message);
  elsewhere.stack = `${fault.message}\n    at nextWrite (file:///app/src/mine.ts:1:1)`;
  assert.equal(isDriverWriteFault(elsewhere), false);
  assert.equal(isDriverWriteFault(new TypeError("Cannot read properties of null")), false);
  assert.equal(isDriverWriteFault(new Error(fault.message)), false);
  assert.equal(isDriverWriteFault("Cannot read properties of null (reading 'write')"), false);
});

Deno.test("isDriverWriteFault takes the driver's write on a socket the server ended (a campaign crash)", () => {
  // As a funnel printed it when PostgreSQL's connection was cut (chaos seed 2774362445).
  const fault = new Error("This socket has been ended by the other party");
  fault.stack = `Error: ${fault.message}\n    at Socket._writeAfterFIN [as write] ` +
    "(ext:deno_node/net.ts:1:10175)\n    at Immediate.nextWrite " +
    "(file:///root/.cache/deno/npm/registry.npmjs.org/postgres/3.4.9/src/connection.js:255:22)";
  assert.equal(isDriverWriteFault(fault), true);
  const elsewhere = new Error(fault.message);
  elsewhere.stack =
    `Error: ${fault.message}\n    at Socket._writeAfterFIN (ext:deno_node/net.ts:1:1)`;
  assert.equal(isDriverWriteFault(elsewhere), false);
});

Deno.test({
  name: "a transaction's connection cut under an open PostgreSQL ledger does not end the process",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const { proxy, url: proxied } = proxiedPostgres(pgUrl!);
    const table = freshTableName();
    const ledger = new Ledger(await PostgresBackend.open(proxied.href, table));
    // The driver itself, as any transaction of the ledger uses it.
    const raw = postgres(proxied.href, { max: 1, onnotice: () => {} });
    try {
      const track = (await ledger.track(TRACK, true))!;
      await track.append({ payload: "before" });
      await raw`select 1`;
      const open = raw.begin((tx) => [tx`select 1`, tx`select pg_sleep(2)`]);
      await sleep(300);
      proxy.cut();
      await assert.rejects(open);
      // Its ROLLBACK was sent on the closed connection: the fault fires at the next turn.
      await sleep(300);
      proxy.restore();
      const after = await track.append({ payload: "after" });
      assert.equal(after.seq, 1);
    } finally {
      await raw.end({ timeout: 0 }).catch(() => {});
      await ledger.close();
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});

Deno.test("isDriverConnectionError takes the driver's connection failures on its servers only", () => {
  const servers = new Set([5432]);
  const destroyed = Object.assign(new Error("write CONNECTION_DESTROYED 127.0.0.1:5432"), {
    code: "CONNECTION_DESTROYED",
    address: ["127.0.0.1"],
    port: [5432],
  });
  assert.equal(isDriverConnectionError(destroyed, servers), true);
  assert.equal(isDriverConnectionError(destroyed, new Set([6543])), false);
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
    code: "ECONNREFUSED",
    port: 5432,
  });
  assert.equal(isDriverConnectionError(refused, servers), true);
  const elsewhere = Object.assign(new Error("boom"), { code: "ENOENT", port: 5432 });
  assert.equal(isDriverConnectionError(elsewhere, servers), false);
  assert.equal(isDriverConnectionError(new Error("write CONNECTION_CLOSED x"), servers), false);
  assert.equal(isDriverConnectionError({ code: "ECONNRESET", port: 5432 }, servers), false);
});

Deno.test({
  name: "a driver connection failure nobody awaits does not end a process with the ledger open",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const table = freshTableName();
    const url = new URL(pgUrl!);
    const backend = await PostgresBackend.open(url.href, table);
    try {
      // As the driver rejects the array-type lookup of a connection destroyed meanwhile.
      void Promise.reject(
        Object.assign(new Error(`write CONNECTION_DESTROYED ${url.host}`), {
          code: "CONNECTION_DESTROYED",
          address: [url.hostname],
          port: [Number(url.port || 5432)],
        }),
      );
      await sleep(100);
      assert.ok(await backend.listTracks());
    } finally {
      await backend.close();
      await dropTable(pgUrl!, table);
    }
  },
});
