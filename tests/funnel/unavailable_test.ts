import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import {
  type LedgerBackend,
  LedgerError,
  MemoryBackend,
  type TrackBackend,
} from "../../src/ledger/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { call } from "./_http.ts";

// A memory backend behind a switch: "down" makes every call fail the way a
// lost database connection does, so the HTTP mapping can be observed.
class SwitchedBackend implements LedgerBackend {
  readonly name = "switched";
  readonly #inner = new MemoryBackend();
  down = false;

  #guard(): void {
    if (this.down) throw new LedgerError("unavailable", "connection refused");
  }
  async listTracks() {
    this.#guard();
    return await this.#inner.listTracks();
  }
  async openTrack(path: Parameters<LedgerBackend["openTrack"]>[0], create: boolean) {
    this.#guard();
    const track = await this.#inner.openTrack(path, create);
    if (!track) return undefined;
    const guard = () => this.#guard();
    const wrapped: TrackBackend = {
      append: async (e) => (guard(), await track.append(e)),
      latest: async () => (guard(), await track.latest()),
      readBefore: async (b, l) => (guard(), await track.readBefore(b, l)),
      readAfter: async (a, l) => (guard(), await track.readAfter(a, l)),
      get: async (s) => (guard(), await track.get(s)),
      erasePayload: async (s) => (guard(), await track.erasePayload(s)),
      first: async () => (guard(), await track.first()),
      trim: async (b) => (guard(), await track.trim(b)),
    };
    return wrapped;
  }
  close() {
    return this.#inner.close();
  }
}

Deno.test("A backend that goes away turns requests into 503 and recovers by itself", async () => {
  const backend = new SwitchedBackend();
  const funnel = await startFunnel(
    loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" }),
    { backend, log: silentLogger },
  );
  const base = `http://127.0.0.1:${funnel.addr.port}`;
  try {
    assert.equal((await call(base, "POST", "/tracks/a/t", { body: "1" })).status, 201);
    backend.down = true;
    const down = await call(base, "POST", "/tracks/a/t", { body: "2" });
    assert.equal(down.status, 503);
    assert.equal(down.headers.get("content-type"), "application/problem+json");
    assert.ok(!down.text.includes("connection refused"), "backend detail is not leaked");
    assert.equal((await call(base, "GET", "/tracks/a/t")).status, 503);
    // A streamed forward page reads before it answers, so an outage is a 503, not a cut-off 200.
    const forward = await call(base, "GET", "/tracks/a/t?after=e1-g0");
    assert.equal(forward.status, 503);
    assert.equal(forward.headers.get("content-type"), "application/problem+json");
    assert.equal((await call(base, "POST", "/tracks/b/t", { body: "1" })).status, 503);
    backend.down = false;
    const back = await call(base, "POST", "/tracks/a/t", { body: "3" });
    assert.equal(back.status, 201);
    assert.equal(back.json.group, "e000001-g00000001", "numbering resumes after the outage");
    const history = await call(base, "GET", "/tracks/a/t");
    assert.deepEqual(history.json.records.map((r: { payload: number }) => r.payload), [1, 3]);
  } finally {
    await funnel.stop();
  }
});
