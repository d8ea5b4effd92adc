// The funnel's cache of parsed track paths is bounded: made-up URLs push out
// the least recently used, never a track in use, and never grow it past
// PARSED_PATHS_MAX. The parsed path object's identity shows whether it was kept.
// Each router owns its cache: two funnels in one process share nothing.
import assert from "node:assert/strict";
import { funnelRoutes, FunnelService, PARSED_PATHS_MAX, TrackPaths } from "../../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../../src/http/mod.ts";
import { Ledger, MemoryBackend } from "../../src/ledger/mod.ts";

const url = (p: string) => `http://funnel/tracks/${p}`;

Deno.test("parsed track paths: a flood of URLs keeps the paths in use and forgets the rest past the bound", () => {
  const paths = new TrackPaths();
  const hot = paths.of(url("room/hot"));
  const cold = paths.of(url("room/cold"));
  for (let i = 0; i < PARSED_PATHS_MAX * 3; i++) {
    paths.of(url(`flood/${i}/t`));
    // The hot track keeps being posted to: it stays the one parsed object.
    if (i % 1000 === 0) assert.equal(paths.of(url("room/hot")), hot);
  }
  assert.equal(paths.of(url("room/hot")), hot);
  assert.equal(paths.size, PARSED_PATHS_MAX);
  // The cold one was pushed out (it is parsed again: equal, not the same object).
  const again = paths.of(url("room/cold"));
  assert.notEqual(again, cold);
  assert.deepEqual(again, cold);
  // Exactly the bound is kept: the newest PARSED_PATHS_MAX - 2 flood paths are still held.
  const newest = paths.of(url(`flood/${PARSED_PATHS_MAX * 3 - 1}/t`));
  assert.equal(paths.of(url(`flood/${PARSED_PATHS_MAX * 3 - 1}/t`)), newest);
});

function router() {
  const ledger = new Ledger(new MemoryBackend());
  return funnelRoutes({
    service: new FunnelService({ ledger }),
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
  });
}

Deno.test("parsed track paths: two routers do not share their cache", async () => {
  const a = router();
  const b = router();
  const posted = await a.request("/tracks/room/1/chat", { method: "POST", body: '"hi"' });
  assert.equal(posted.status, 201);
  await posted.body?.cancel();
  // The POST parsed its path into a's cache only.
  assert.equal(a.paths.size, 1);
  assert.equal(b.paths.size, 0);
  // A flood through a, past the bound, leaves b's paths where they are.
  const kept = b.paths.of(url("room/1/chat"));
  for (let i = 0; i < PARSED_PATHS_MAX + 10; i++) {
    const r = await a.request(`/tracks/flood/${i}/t`, { method: "POST", body: "1" });
    await r.body?.cancel();
  }
  assert.equal(a.paths.size, PARSED_PATHS_MAX);
  assert.equal(b.paths.size, 1);
  assert.equal(b.paths.of(url("room/1/chat")), kept);
  // Each parsed its own object for the same URL.
  assert.notEqual(a.paths.of(url("room/1/chat")), kept);
  assert.deepEqual(a.paths.of(url("room/1/chat")), kept);
});
