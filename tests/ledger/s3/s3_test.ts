// S3 backend specifics: an upload cut short by a dying writer is never served, and a
// write that lands late never replaces an acknowledged one.
import assert from "node:assert/strict";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { decodeBatch } from "../../../src/ledger/codec.ts";
import { Ledger, type TrackPath } from "../../../src/ledger/mod.ts";
import { S3Backend } from "../../../src/ledger/s3/s3_backend.ts";
import { startS3rver } from "../../support/s3rver.ts";
import { startS3Proxy } from "../../support/s3_proxy.ts";

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
    // What an S3-compatible server may keep when the writer dies mid-PUT of batch 3..4; its
    // key is the one the next batch takes, so it must be gone before that conditional PUT.
    const tornKey = keys[0]!.replace(/\/\d{16}$/, "/9999999999999996");
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

const PUT_BATCH = { method: "PUT", key: /\/data\// };

Deno.test("ledger s3: a PUT that lands after its deadline never replaces the batch acknowledged in its place", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const published: string[] = [];
  try {
    // The storage deadline is the shipped default (5 s); the store applies A's PUT at 6.5 s.
    const ledger = new Ledger(await S3Backend.open(proxy.backendOptions("late")));
    ledger.commits.subscribe({
      committed: (_path, entries) =>
        void published.push(...entries.map((e) => `${e.seq}:${e.payload}`)),
    });
    const track = (await ledger.track(PATH, true))!;
    proxy.delay(PUT_BATCH, 6500);
    await assert.rejects(track.append({ payload: `"A"` }), { name: "LedgerError" });
    const b = await track.append({ payload: `"B"` });
    assert.equal(b.seq, 0);
    await proxy.idle(); // A's PUT has reached the store by now
    const history = await track.backend.readBefore(undefined, 10);
    assert.deepEqual(history.map((e) => `${e.seq}:${e.payload}`), [`0:"B"`]);
    assert.deepEqual(published, [`0:"B"`]);
    assert.equal(proxy.refused, 1, "the late PUT was refused");
    assert.equal(proxy.abandoned, 1, "the client gave up the PUT at the deadline");
    await ledger.close();

    const reopened = new Ledger(await S3Backend.open(proxy.backendOptions("late")));
    const again = (await reopened.track(PATH, false))!;
    const stored = await again.backend.readBefore(undefined, 10);
    assert.deepEqual(stored.map((e) => `${e.seq}:${e.payload}`), [`0:"B"`]);
    await reopened.close();
  } finally {
    await proxy.close();
    await s3.stop();
  }
});

Deno.test("ledger s3: a late PUT that lands first wins its sequence; the batch that lost is refused and the next one publishes it", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const published: string[] = [];
  try {
    const ledger = new Ledger(await S3Backend.open(proxy.backendOptions("first")));
    ledger.commits.subscribe({
      committed: (_path, entries) =>
        void published.push(...entries.map((e) => `${e.seq}:${e.payload}`)),
    });
    const track = (await ledger.track(PATH, true))!;
    // A lands at 5.6 s, just past the 5 s deadline; B, numbered 0 too, reaches the store later.
    proxy.delay(PUT_BATCH, 5600);
    proxy.delay(PUT_BATCH, 2000);
    await assert.rejects(track.append({ payload: `"A"` }), { name: "LedgerError" });
    await assert.rejects(track.append({ payload: `"B"` }), /already taken by another write/);
    const c = await track.append({ payload: `"C"` });
    assert.equal(c.seq, 1);
    const history = await track.backend.readBefore(undefined, 10);
    assert.deepEqual(history.map((e) => `${e.seq}:${e.payload}`), [`1:"C"`, `0:"A"`]);
    assert.deepEqual(published, [`0:"A"`, `1:"C"`]);
    await ledger.close();
  } finally {
    await proxy.idle();
    await proxy.close();
    await s3.stop();
  }
});

Deno.test("ledger s3: batch objects named by first and last seq, as written before, are read and continued", async () => {
  const s3 = await startS3rver();
  const options = s3.backendOptions("old");
  const client = s3.client();
  try {
    const first = new Ledger(await S3Backend.open(options));
    const track = (await first.track(PATH, true))!;
    await Promise.all([0, 1, 2].map((i) => track.append({ payload: `${i}` })));
    await track.append({ payload: "3" });
    await first.close();
    // Rename every batch object to the earlier layout, <inverted first>-<last>.
    const listed = await client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "old/data/" }),
    );
    for (const { Key } of listed.Contents ?? []) {
      const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key }));
      const body = await object.Body!.transformToByteArray();
      const last = decodeBatch(body).at(-1)!.seq;
      await client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: `${Key}-${String(last).padStart(16, "0")}`,
          Body: body,
          Metadata: object.Metadata,
        }),
      );
      await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key }));
    }

    const second = new Ledger(await S3Backend.open(options));
    const reopened = (await second.track(PATH, false))!;
    assert.equal(reopened.newest?.seq, 3);
    assert.equal((await reopened.append({ payload: "4" })).seq, 4);
    const all = await reopened.backend.readBefore(undefined, 10);
    assert.deepEqual(all.map((e) => e.payload), ["4", "3", "2", "1", "0"]);
    const page = await reopened.backend.readBefore(4, 2);
    assert.deepEqual(page.map((e) => e.payload), ["3", "2"]);
    const forward = await reopened.backend.readAfter(0, 3);
    assert.deepEqual(forward.map((e) => e.payload), ["1", "2", "3"]);
    assert.equal((await reopened.backend.get(1))?.payload, "1");
    await second.close();
  } finally {
    client.destroy();
    await s3.stop();
  }
});

Deno.test("ledger s3: a page before a cursor past the end of the track is full", async () => {
  const s3 = await startS3rver();
  try {
    const ledger = new Ledger(await S3Backend.open(s3.backendOptions("past")));
    const track = (await ledger.track(PATH, true))!;
    for (let i = 0; i < 5; i++) await track.append({ payload: `${i}` });
    // The listing does not tell where the newest batch ends; the page must not stop there.
    const page = await track.backend.readBefore(1000, 3);
    assert.deepEqual(page.map((e) => e.payload), ["4", "3", "2"]);
    await ledger.close();
  } finally {
    await s3.stop();
  }
});

Deno.test("ledger s3: a batch the store acknowledged but holds torn is an error, never deleted", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const client = s3.client();
  try {
    const ledger = new Ledger(await S3Backend.open(proxy.backendOptions("lied")));
    const track = (await ledger.track(PATH, true))!;
    await track.append({ payload: "0" });
    // The store answers 200 for batch 1 but keeps half of it (an upload cut short looks so).
    proxy.tear(PUT_BATCH);
    assert.equal((await track.append({ payload: "1" })).seq, 1);
    proxy.fail(PUT_BATCH, 503, 2); // both attempts
    await assert.rejects(track.append({ payload: "2" }), { name: "LedgerError" });
    // The next commit re-reads the tail first and meets the acknowledged batch torn.
    await assert.rejects(track.append({ payload: "3" }), /the store acknowledged writing it/);
    await assert.rejects(track.backend.readBefore(undefined, 10), /acknowledged writing it/);
    await assert.rejects(track.backend.readAfter(undefined, 10), /acknowledged writing it/);
    const listed = await client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "lied/data/" }),
    );
    assert.equal(listed.KeyCount, 2, "the acknowledged batch is kept for an operator");
    await ledger.close();
  } finally {
    client.destroy();
    await proxy.close();
    await s3.stop();
  }
});
