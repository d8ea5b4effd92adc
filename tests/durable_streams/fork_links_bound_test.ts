// The forks a funnel remembers the source of are bounded: a writer making ever more forks
// does not grow the registry past MAX_KEPT_FORKS. The links only make a deleted source answer
// 410 while forks read it; a dropped one lets its source be deleted outright, and every fork
// still reads what it inherited.
import assert from "node:assert/strict";
import { Ledger, MemoryBackend } from "../../src/ledger/mod.ts";
import { StreamService } from "../../src/durable_streams/mod.ts";
import { MAX_KEPT_FORKS } from "../../src/durable_streams/registry.ts";

async function withStreams(
  maxForks: number | undefined,
  body: (
    streams: StreamService,
    call: (method: string, name: string, from?: string) => Promise<[number, string]>,
  ) => Promise<void>,
): Promise<void> {
  const ledger = new Ledger(new MemoryBackend());
  const streams = new StreamService({
    ledger,
    verifier: undefined,
    ...(maxForks !== undefined ? { maxForks } : {}),
  });
  const call = async (method: string, name: string, from?: string): Promise<[number, string]> => {
    const response = await streams.handle(
      new Request(`http://funnel/v1/stream/${name}`, {
        method,
        headers: {
          "content-type": "text/plain",
          ...(from ? { "stream-forked-from": `/v1/stream/${from}` } : {}),
        },
        ...(method === "POST" || (method === "PUT" && !from) ? { body: "x" } : {}),
      }),
    );
    return [response.status, await response.text()];
  };
  try {
    await body(streams, call);
  } finally {
    await ledger.close();
  }
}

Deno.test("one fork more than the bound leaves the bound remembered; a deleted source is 410 while remembered forks read it", async () => {
  // Lowered to 3 (shipped MAX_KEPT_FORKS, 4096) so that four forks pass it; the twin below
  // runs at the default.
  await withStreams(3, async (streams, call) => {
    assert.equal((await call("PUT", "src"))[0], 201);
    for (let i = 0; i < 4; i++) assert.equal((await call("PUT", `f${i}`, "src"))[0], 201);
    assert.equal(streams.forkLinks, 3);
    // f0's link was dropped; f1..f3 still hold the source.
    assert.equal((await call("DELETE", "src"))[0], 204);
    assert.equal((await call("GET", "src"))[0], 410);
    for (const f of ["f1", "f2", "f3"]) assert.equal((await call("DELETE", f))[0], 204);
    assert.equal((await call("GET", "src"))[0], 404, "released with its last remembered fork");
    assert.equal(streams.forkLinks, 0);
    // The forgotten fork still reads what it inherited.
    assert.deepEqual(await call("GET", "f0"), [200, "x"]);
  });
});

Deno.test("at the shipped default, MAX_KEPT_FORKS + 1 forks leave MAX_KEPT_FORKS remembered", async () => {
  await withStreams(undefined, async (streams, call) => {
    assert.equal((await call("PUT", "src"))[0], 201);
    for (let i = 0; i <= MAX_KEPT_FORKS; i++) {
      assert.equal((await call("PUT", `f${i}`, "src"))[0], 201);
    }
    assert.equal(streams.forkLinks, MAX_KEPT_FORKS);
  });
});
