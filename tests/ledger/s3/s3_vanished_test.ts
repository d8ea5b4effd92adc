// A track whose newest batch object is listed and then gone before its GET (another reader of
// the track deleted it as a torn leftover) is not an empty track: opening it reads the batch
// below, so the next record is numbered after it. It used to open as empty, so its next record
// took sequence 0, which the store refuses (a 503) or, without conditional writes, replaces.
import assert from "node:assert/strict";
import { DeleteObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { Ledger, loadS3Backend, type TrackPath } from "../../../src/ledger/mod.ts";
import { startS3Proxy } from "../../support/s3_proxy.ts";
import { startS3rver } from "../../support/s3rver.ts";

const PATH: TrackPath = { broadcast: ["b"], track: "t" };

Deno.test("ledger s3: a newest batch that vanishes between listing and reading does not empty the track", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const client = s3.client();
  const { S3Backend } = await loadS3Backend();
  try {
    const writer = new Ledger(await S3Backend.open(proxy.backendOptions("gone")));
    const written = (await writer.track(PATH, true))!;
    await written.append({ payload: `"a"` });
    await written.append({ payload: `"b"` });
    await writer.close();
    const keys = (await client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "gone/data/" }),
    )).Contents!.map((o) => o.Key!);
    assert.equal(keys.length, 2);

    // The reader's GET of the newest object is held; the object is deleted meanwhile.
    const held = proxy.delay({ method: "GET", key: /\/data\// }, 2000, 1);
    const reader = new Ledger(await S3Backend.open(proxy.backendOptions("gone")));
    const opening = reader.track(PATH, false);
    await held;
    await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: keys[0]! }));
    const track = (await opening)!;
    assert.equal(track.newest?.seq, 0, "the batch below the vanished one is the newest");
    const next = await track.append({ payload: `"c"` });
    assert.equal(next.seq, 1);
    await reader.close();
  } finally {
    client.destroy();
    await proxy.close();
    await s3.stop();
  }
});
