// Producer-Id entries per stream are bounded: a writer naming a new producer
// with every append makes the stream forget the least recently appending one
// (which must then start a new epoch), never grow without limit, and a funnel
// reading the stream back from its ledger remembers the same producers.
import assert from "node:assert/strict";
import { MAX_PRODUCERS } from "../../src/durable_streams/stream_head.ts";
import { MAX_PRODUCER_ID } from "../../src/durable_streams/headers.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";
import { withTempDir } from "../support/temp_dir.ts";

async function append(url: string, id: string, epoch: number, seq: number): Promise<Response> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "text/plain",
      "producer-id": id,
      "producer-epoch": String(epoch),
      "producer-seq": String(seq),
    },
    body: "x",
  });
  await response.body?.cancel();
  return response;
}

Deno.test("A stream remembers at most MAX_PRODUCERS producers, forgetting the least recently appending, also when read back", async () => {
  using _q = quiet();
  await withTempDir(async (dir) => {
    const ledger = { LEDGER_URI: `file://${dir}` };
    let url: string;
    {
      await using f = await startLiveFunnel(ledger);
      url = `${f.base}/v1/stream/room/producers`;
      const put = await fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } });
      assert.equal(put.status, 201);
      // p0 appends first, then MAX_PRODUCERS others: p0 is the one forgotten.
      for (let i = 0; i <= MAX_PRODUCERS; i++) {
        assert.equal((await append(url, `p${i}`, 0, 0)).status, 200, `p${i}`);
      }
      // p0's next append is a gap now (it was forgotten); p1's is accepted, and its retry
      // of seq 0 is still a duplicate.
      const forgotten = await append(url, "p0", 0, 1);
      assert.equal(forgotten.status, 409);
      assert.equal(forgotten.headers.get("producer-expected-seq"), "0");
      assert.equal((await append(url, "p1", 0, 1)).status, 200);
      assert.equal((await append(url, "p2", 0, 0)).status, 204, "a retry is a duplicate");
      // A forgotten producer starts over with a new epoch.
      assert.equal((await append(url, "p0", 1, 0)).status, 200);
    }
    // Read back from the ledger by a new funnel: p0 (epoch 1) and p1 are remembered; p2,
    // then the least recent (its retry stored nothing), was forgotten when p0 came back.
    await using g = await startLiveFunnel(ledger);
    url = `${g.base}/v1/stream/room/producers`;
    assert.equal((await append(url, "p0", 1, 0)).status, 204, "p0's retry is a duplicate");
    assert.equal((await append(url, "p1", 0, 1)).status, 204, "p1's retry is a duplicate");
    assert.equal((await append(url, "p3", 0, 0)).status, 204, "p3 is still remembered");
    const p2 = await append(url, "p2", 0, 1);
    assert.equal(p2.status, 409, "p2 was forgotten");
    assert.equal(p2.headers.get("producer-expected-seq"), "0");
  });
});

Deno.test("A Producer-Id longer than MAX_PRODUCER_ID characters is a 400", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/room/long-id`;
  await (await fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } })).body
    ?.cancel();
  assert.equal((await append(url, "p".repeat(MAX_PRODUCER_ID), 0, 0)).status, 200);
  assert.equal((await append(url, "p".repeat(MAX_PRODUCER_ID + 1), 0, 0)).status, 400);
});
