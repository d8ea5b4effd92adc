import assert from "node:assert/strict";
import fs from "node:fs";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { startS3rver } from "./s3rver.ts";

type Write = (this: unknown, ...args: unknown[]) => void;

Deno.test("s3rver: an object reads back whole right after its PUT, however slow the disk", async () => {
  // A disk slow to write: each file stream write starts 300 ms late (s3rver keeps object bytes
  // through one; its metadata goes through writeFile and is not slowed).
  const proto = fs.WriteStream.prototype as unknown as Record<string, Write | undefined>;
  const originals = { _write: proto._write, _writev: proto._writev };
  let slowed = 0;
  for (const name of ["_write", "_writev"] as const) {
    const original = originals[name];
    if (!original) continue;
    proto[name] = function (this: unknown, ...args: unknown[]): void {
      slowed++;
      setTimeout(() => original.apply(this, args), 300);
    };
  }
  const s3 = await startS3rver();
  const client = s3.client();
  try {
    for (const size of [15, 100_000]) {
      const body = new Uint8Array(size).fill(65);
      const Key = `k/${size}`;
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body: body }));
      const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key }));
      assert.deepEqual(await object.Body!.transformToByteArray(), body);
    }
    assert.ok(slowed > 0, "the disk was slowed");
  } finally {
    Object.assign(proto, originals);
    client.destroy();
    await s3.stop();
  }
});
