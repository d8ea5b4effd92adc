// A POST to a track that differs only in case from a stored one, on a
// directory ledger whose file system folds case: 409, and no record mixes.
// No case-folding mount exists here, so the probe result is injected and a
// symlink makes `Room…` resolve to `room…`, as a folding file system would.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import { DirectoryBackend } from "../../src/ledger/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { call } from "./_http.ts";

Deno.test("funnel: Room/1/chat beside room/1/chat on a case-folding directory ledger is 409 and reads as absent", async () => {
  await withTempDir(async (dir) => {
    const backend = await DirectoryBackend.open(dir, { foldsCase: true });
    const funnel = await startFunnel(
      loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" }),
      { backend, log: silentLogger },
    );
    const base = `http://127.0.0.1:${funnel.addr.port}`;
    try {
      assert.equal((await call(base, "POST", "/tracks/room/1/chat", { body: "1" })).status, 201);
      await Deno.symlink("room%2F1%2Fchat", `${dir}/tracks/Room%2F1%2Fchat`);
      const refused = await call(base, "POST", "/tracks/Room/1/chat", { body: "2" });
      assert.equal(refused.status, 409);
      assert.equal(refused.headers.get("content-type"), "application/problem+json");
      assert.match(refused.json.detail, /"Room\/1\/chat" differs only in case/);
      assert.match(refused.json.detail, /"room\/1\/chat"/);
      assert.equal((await call(base, "GET", "/tracks/Room/1/chat")).status, 404);
      const history = await call(base, "GET", "/tracks/room/1/chat");
      assert.deepEqual(history.json.records.map((r: { payload: number }) => r.payload), [1]);
    } finally {
      await funnel.stop();
    }
  });
});

Deno.test("funnel: a Durable Stream Room beside room on a case-folding directory ledger is 409 and reads as absent", async () => {
  await withTempDir(async (dir) => {
    const backend = await DirectoryBackend.open(dir, { foldsCase: true });
    const funnel = await startFunnel(
      loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" }),
      { backend, log: silentLogger },
    );
    const base = `http://127.0.0.1:${funnel.addr.port}`;
    const json = { "content-type": "application/json" };
    try {
      const made = await call(base, "PUT", "/v1/stream/room", { body: "[1]", headers: json });
      assert.equal(made.status, 201);
      const [stored] = (await Array.fromAsync(Deno.readDir(`${dir}/tracks`))).map((d) => d.name);
      assert.ok(stored?.includes("room"), stored);
      await Deno.symlink(stored!, `${dir}/tracks/${stored!.replace("room", "Room")}`);
      const refused = await call(base, "PUT", "/v1/stream/Room", { body: "[2]", headers: json });
      assert.equal(refused.status, 409);
      assert.match(refused.text, /differs only in case/);
      assert.equal((await call(base, "GET", "/v1/stream/Room")).status, 404);
      const read = await call(base, "GET", "/v1/stream/room?offset=-1");
      assert.deepEqual(read.json, [1]);
    } finally {
      await funnel.stop();
    }
  });
});
