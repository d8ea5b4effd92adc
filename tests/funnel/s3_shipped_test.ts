// A funnel on an S3 ledger (s3rver), run exactly as shipped (deno.json's `funnel` permissions,
// its own process): it reaches its bucket, acknowledges a record and serves it from history.
// The AWS SDK reads `os.release()` for its user agent, which Deno refuses without
// `--allow-sys=osRelease`; with the old `--allow-sys=hostname` alone the funnel exited with
// "Cannot reach bucket".
import assert from "node:assert/strict";
import { startS3rver } from "../support/s3rver.ts";
import { shippedFlags } from "../support/shipped_flags.ts";
import { startShippedFunnel } from "../support/shipped_funnel.ts";

Deno.test("a funnel on S3 started with the shipped permissions reaches its bucket and serves history", async () => {
  const s3 = await startS3rver("shipped");
  const funnel = await startShippedFunnel(s3.ledgerUri("ledger"), {
    env: {
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    },
  });
  try {
    assert.ok(
      funnel.base,
      `flags ${shippedFlags("funnel").join(" ")}:\n${funnel.process.lines.join("\n")}`,
    );
    const posted = await fetch(`${funnel.base}/tracks/room/1/chat`, {
      method: "POST",
      body: `{"text":"hello"}`,
      headers: { "content-type": "application/json" },
    });
    assert.equal(posted.status, 201, await posted.text());
    const page = await fetch(`${funnel.base}/tracks/room/1/chat`);
    assert.equal(page.status, 200);
    const body = await page.json() as { records: { payload: unknown }[] };
    assert.deepEqual(body.records.map((r) => r.payload), [{ text: "hello" }]);
  } finally {
    await funnel.kill();
    await s3.stop();
  }
});
