// S3 compaction specifics: a batch object compaction emptied or cut at either end stays,
// naming the span it was committed with, so pages both ways read past long runs of
// removed positions, the next batch still ends where it did, a redaction inside a
// compacted batch keeps its span, and a reopened ledger reads the same view.
import assert from "node:assert/strict";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { Ledger, Retention, type TrackLedger, type TrackPath } from "../../../src/ledger/mod.ts";
import { S3Backend } from "../../../src/ledger/s3/s3_backend.ts";
import { startS3rver } from "../../support/s3rver.ts";

// Enough one-record batches that pages cross a run of removed positions longer than they are.
const N = 600;
const PATH: TrackPath = { broadcast: ["state", "s3"], track: "t" };

const compact = (ledger: Ledger): Promise<unknown> =>
  new Retention(ledger, { config: { default: { compactKey: "k" }, rules: [] } }).pass();

const seqsOf = async (track: TrackLedger): Promise<number[]> =>
  (await Array.fromAsync(track.entries({}))).map((e) => e.seq);

Deno.test("ledger s3: compaction empties or cuts batch objects, and pages read past them", async () => {
  const s3 = await startS3rver();
  const options = s3.backendOptions("c");
  const client = s3.client();
  try {
    const ledger = new Ledger(await S3Backend.open(options), { deadlineMs: 0 });
    const track = (await ledger.track(PATH, true))!;
    // N one-record batches of key "a", then one batch of 5 (b a c a b), then "c".
    for (let i = 0; i < N; i++) await track.append({ payload: `{"k":"a","i":${i}}` });
    await Promise.all(
      ["b", "a", "c", "a", "b"].map((k, i) =>
        track.append({ payload: `{"k":"${k}","i":${N + i}}` })
      ),
    );
    await track.append({ payload: `{"k":"c","i":${N + 5}}` });
    const objects = async (): Promise<number> =>
      ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "c/data/" })))
        .Contents ?? []).length;
    const before = await objects();
    await compact(ledger);
    // Kept: the first (0), the newest "a" (N + 3), the newest "b" (N + 4) and "c" (N + 5).
    assert.deepEqual(await seqsOf(track), [0, N + 3, N + 4, N + 5]);
    assert.equal(
      await objects(),
      before,
      "emptied batch objects stay: they mark where batches end",
    );
    // Both ways, from positions inside the removed run.
    assert.deepEqual((await track.backend.readAfter(5, 2)).map((e) => e.seq), [N + 3, N + 4]);
    assert.deepEqual((await track.backend.readBefore(N + 3, 5)).map((e) => e.seq), [0]);
    assert.equal(await track.backend.get(N + 2), undefined);
    // A redaction inside the cut batch keeps its span: the batch after it still reads.
    await track.redact(N + 3, undefined);
    assert.equal((await track.backend.get(N + 3))?.redacted, true);
    await ledger.close();

    const again = new Ledger(await S3Backend.open(options), { deadlineMs: 0 });
    const reopened = (await again.track(PATH, false))!;
    assert.deepEqual(await seqsOf(reopened), [0, N + 3, N + 4, N + 5, N + 6]);
    assert.equal((await reopened.append({ payload: `{"k":"c"}` })).seq, N + 7);
    await compact(again);
    assert.deepEqual(await seqsOf(reopened), [0, N + 3, N + 4, N + 6, N + 7]);
    await again.close();
  } finally {
    client.destroy();
    await s3.stop();
  }
});
