// The HTTP routes driven in process with router.request(), no socket: the same
// contract as over a listener, for embedders that call the router's one entrance.
import assert from "node:assert/strict";
import { funnelRoutes, FunnelService } from "../../src/funnel/mod.ts";
import { originPolicy, SAME_ORIGIN_ONLY } from "../../src/http/mod.ts";
import { Ledger, MemoryBackend } from "../../src/ledger/mod.ts";

function app(cors = SAME_ORIGIN_ONLY) {
  let ns = 1_700_000_000_000_000_000n;
  const ledger = new Ledger(new MemoryBackend(), { clock: () => (ns += 1000n) });
  return funnelRoutes({ service: new FunnelService({ ledger }), verifier: undefined, cors });
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
  assert.deepEqual(Object.keys(problem).sort(), ["code", "detail", "status", "title", "type"]);
  assert.equal(problem.code, "not_found");
  const bad = await routes.request("/tracks/a/t?limit=0");
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
});

Deno.test("In process: with CORS on, a POST takes the same entrance, its answers and failures marked", async () => {
  const routes = app(originPolicy(["https://app.example"]));
  const origin = { origin: "https://app.example" };
  const posted = await routes.request("/tracks/a/t", {
    method: "POST",
    headers: origin,
    body: "1",
  });
  assert.equal(posted.status, 201);
  assert.equal(posted.headers.get("access-control-allow-origin"), "https://app.example");
  await posted.body?.cancel();
  // A failed POST (not JSON) is marked too, so the page can read its problem.
  const bad = await routes.request("/tracks/a/t", { method: "POST", headers: origin, body: "{" });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get("access-control-allow-origin"), "https://app.example");
  assert.equal((await bad.json()).code, "invalid_request");
  // The POST went through the router's own parsed paths, like every other route.
  assert.equal(routes.paths.size, 1);
  const preflight = await routes.request("/tracks/a/t", {
    method: "OPTIONS",
    headers: { ...origin, "access-control-request-method": "POST" },
  });
  assert.equal(preflight.status, 204);
  const other = await routes.request("/tracks/a/t", {
    method: "POST",
    headers: { origin: "https://evil.example" },
    body: "2",
  });
  assert.equal(other.status, 201);
  assert.equal(other.headers.get("access-control-allow-origin"), null);
  await other.body?.cancel();
});

Deno.test("In process: a POST to /tracks itself or outside it is a 404, with CORS on or off", async () => {
  for (const cors of [SAME_ORIGIN_ONLY, originPolicy(["https://app.example"])]) {
    const routes = app(cors);
    for (const path of ["/tracks", "/Tracks/a/t", "/trackss/a/t"]) {
      const r = await routes.request(path, { method: "POST", body: "1" });
      assert.equal(r.status, 404, path);
      assert.equal((await r.json()).code, "not_found");
    }
  }
});
