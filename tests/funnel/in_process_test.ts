// The HTTP routes driven in process with app.request(), no socket: the same
// contract as over a listener, for embedders that mount the Hono app.
import assert from "node:assert/strict";
import { funnelRoutes, FunnelService } from "../../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../../src/http/mod.ts";
import { Ledger, MemoryBackend } from "../../src/ledger/mod.ts";

function app() {
  let ns = 1_700_000_000_000_000_000n;
  const ledger = new Ledger(new MemoryBackend(), { clock: () => (ns += 1000n) });
  return funnelRoutes({
    service: new FunnelService({ ledger }),
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
  });
}

Deno.test("In process: POST then GET returns the record with an exact injected wallclock", async () => {
  const routes = app();
  const posted = await routes.request("/tracks/a/b/t", { method: "POST", body: '{"n":1}' });
  assert.equal(posted.status, 201);
  assert.equal(
    await posted.text(),
    '{"group":"e000001-g00000000","wallclock":1700000000000001000}',
  );
  const history = await routes.request("/tracks/a/b/t");
  assert.equal(
    await history.text(),
    '{"records":[{"group":"e000001-g00000000","wallclock":1700000000000001000,"payload":{"n":1}}]}',
  );
});

Deno.test("In process: payload bytes are kept exactly as posted (inner spacing, key order, unicode)", async () => {
  const routes = app();
  const body = '{ "z" : 1,"a":[1, 2 ,3], "s":"é\\u00e9" }';
  await routes.request("/tracks/a/t", { method: "POST", body: `\n  ${body}\n` });
  const text = await (await routes.request("/tracks/a/t")).text();
  assert.ok(text.includes(`"payload":${body}`), text);
});

Deno.test("In process: 404 and 400 answers carry problem+json", async () => {
  const routes = app();
  const missing = await routes.request("/tracks/a/none");
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get("content-type"), "application/problem+json");
  const problem = await missing.json();
  assert.deepEqual(Object.keys(problem).sort(), ["detail", "status", "title", "type"]);
  const bad = await routes.request("/tracks/a/t?limit=0");
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
});
