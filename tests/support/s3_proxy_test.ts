import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { startS3rver } from "./s3rver.ts";
import { startS3Proxy } from "./s3_proxy.ts";

const statusOf = async (p: Promise<unknown>): Promise<number> => {
  try {
    await p;
    return 200;
  } catch (error) {
    return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  }
};

const body = async (client: S3Client, bucket: string, key: string): Promise<string> =>
  await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!
    .transformToString();

Deno.test("s3 proxy: honours If-None-Match, fails, delays and tears requests on demand", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const direct = s3.client();
  const client = new S3Client({
    region: "us-east-1",
    endpoint: proxy.endpoint,
    forcePathStyle: true,
    credentials: s3.credentials,
    maxAttempts: 1,
  });
  const put = (key: string, text: string, conditional: boolean) =>
    client.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: key,
        Body: text,
        ...(conditional ? { IfNoneMatch: "*" } : {}),
      }),
    );
  try {
    assert.equal(await statusOf(put("k", "first", true)), 200);
    assert.equal(await statusOf(put("k", "second", true)), 412);
    assert.equal(proxy.refused, 1);
    assert.equal(await body(direct, s3.bucket, "k"), "first");
    assert.equal(await statusOf(put("k", "third", false)), 200, "an unconditional PUT replaces");
    assert.equal(await body(direct, s3.bucket, "k"), "third");

    proxy.fail({ method: "PUT", key: /^f/ }, 503);
    assert.equal(await statusOf(put("f", "x", true)), 503);
    assert.equal(await statusOf(put("f", "x", true)), 200, "one failure only");

    proxy.delay({ method: "PUT" }, 300);
    const late = put("d", "late", true);
    assert.equal(await statusOf(put("d", "early", true)), 200, "an undelayed PUT lands first");
    assert.equal(await statusOf(late), 412);
    assert.equal(await body(direct, s3.bucket, "d"), "early");

    proxy.tear({ method: "PUT" });
    await client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: "t", Body: "abcdef", Metadata: { m: "1" } }),
    );
    const torn = await direct.send(new GetObjectCommand({ Bucket: s3.bucket, Key: "t" }));
    assert.equal(await torn.Body!.transformToString(), "abc", "answered 200, half stored");
    assert.deepEqual(torn.Metadata, { m: "1" });
  } finally {
    client.destroy();
    direct.destroy();
    await proxy.close();
    await s3.stop();
  }
});
