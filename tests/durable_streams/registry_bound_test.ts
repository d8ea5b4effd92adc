// The streams a funnel keeps state for are bounded: past MAX_KEPT_STREAMS the
// least recently used idle stream is forgotten, and read back from the ledger,
// with its producers, when it is named again. At the default bound, over the
// funnel's own ledger and commit feed, with requests as the HTTP API hands them.
import assert from "node:assert/strict";
import { Ledger, MemoryBackend } from "../../src/ledger/mod.ts";
import { StreamService } from "../../src/durable_streams/mod.ts";
import { MAX_KEPT_STREAMS } from "../../src/durable_streams/registry.ts";

Deno.test("A funnel keeps at most MAX_KEPT_STREAMS streams' state; a forgotten stream is read back with its producers", async () => {
  // The ledger's hook needs the service, which needs the ledger: the hook reads it once built.
  const ledger = new Ledger(new MemoryBackend());
  const streams = new StreamService({ ledger, verifier: undefined });
  const call = async (method: string, name: string, headers: Record<string, string> = {}) => {
    const response = await streams!.handle(
      new Request(`http://funnel/v1/stream/${name}`, {
        method,
        headers: { "content-type": "text/plain", ...headers },
        ...(method === "POST" ? { body: "x" } : {}),
      }),
    );
    await response.body?.cancel();
    return response.status;
  };
  const producer = (seq: number) => ({
    "producer-id": "p",
    "producer-epoch": "0",
    "producer-seq": String(seq),
  });
  try {
    assert.equal(await call("PUT", "first"), 201);
    assert.equal(await call("POST", "first", producer(0)), 200);
    for (let i = 0; i < MAX_KEPT_STREAMS; i++) assert.equal(await call("PUT", `s${i}`), 201);
    assert.equal(streams.keptStreams, MAX_KEPT_STREAMS);
    // "first" was the least recently used: forgotten, then read back from its track.
    assert.equal(await call("POST", "first", producer(0)), 204, "the retry is a duplicate");
    assert.equal(await call("POST", "first", producer(2)), 409, "a gap is still a gap");
    assert.equal(await call("POST", "first", producer(1)), 200);
    assert.equal(streams.keptStreams, MAX_KEPT_STREAMS);
  } finally {
    await ledger.close();
  }
});
