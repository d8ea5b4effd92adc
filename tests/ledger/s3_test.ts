// S3 backend specifics: an upload cut short by a dying writer is never served.
import assert from "node:assert/strict";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { Ledger, type TrackPath } from "../../src/ledger/mod.ts";
import { S3Backend } from "../../src/ledger/s3/s3_backend.ts";
import { startS3rver } from "../support/s3rver.ts";

const PATH: TrackPath = { broadcast: ["b"], track: "t" };

Deno.test("ledger s3: a newest batch object cut short is removed at open, not served", async () => {
  const s3 = await startS3rver();
  const options = s3.backendOptions("torn");
  const client = s3.client();
  try {
    const first = new Ledger(await S3Backend.open(options));
    const track = (await first.track(PATH, true))!;
    for (let i = 0; i < 3; i++) await track.append({ payload: `${i}` });
    await first.close();

    const list = async (): Promise<string[]> =>
      ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "torn/data/" })))
        .Contents ?? []).map((o) => o.Key!);
    const keys = await list();
    assert.equal(keys.length, 3);
    // What an S3-compatible server may keep when the writer dies mid-PUT of batch 3..4.
    const tornKey = keys[0]!.replace(/\/\d{16}-\d{16}$/, "/9999999999999996-0000000000000004");
    await client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: tornKey, Body: '[{"e":1,"s":3,"w":"1"' }),
    );

    const second = new Ledger(await S3Backend.open(options));
    const reopened = (await second.track(PATH, false))!;
    assert.equal(reopened.newest?.seq, 2);
    assert.equal((await list()).includes(tornKey), false, "the torn object is deleted");
    assert.equal((await reopened.append({ payload: `"next"` })).seq, 3);
    const all = await reopened.backend.readBefore(undefined, 10);
    assert.deepEqual(all.map((e) => e.payload), [`"next"`, "2", "1", "0"]);
    await second.close();
  } finally {
    client.destroy();
    await s3.stop();
  }
});
