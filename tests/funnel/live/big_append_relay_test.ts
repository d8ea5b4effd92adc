// The largest stream append the funnel takes (16 MiB) is a record frame of about 21.4 MiB
// (base64 in JSON). Acknowledged, it must reach a subscriber through a relay at the shipped
// frame limits, not only one on the funnel's own listener. It did not while every session
// took frames up to 16 MiB only: the relay's upstream session dropped it.
import assert from "node:assert/strict";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialOurs } from "../../support/moq.ts";
import { ingestBase, startServer } from "../../support/processes.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { withTempDir } from "../../support/temp_dir.ts";
import { within } from "../../support/wait.ts";

const MiB = 1 << 20;
const SIZES = [1 * MiB, 16 * MiB - 4096, 1 * MiB];

Deno.test("a 16 MiB stream append reaches a relay subscriber whole at the shipped frame limits", async () => {
  await withTempDir(async (dir) => {
    const files = await testCertificateFiles();
    const relay = await startTestRelay();
    const funnel = await startServer("funnel", {
      env: {
        FUNNEL_ADDR: "127.0.0.1:0",
        FUNNEL_SERVE_ADDR: "127.0.0.1:0",
        CERT_FILE: files.cert,
        KEY_FILE: files.key,
        RELAY_URL: `moqt://localhost:${relay.port}/`,
        RELAY_CA_FILE: files.cert,
        LEDGER_URI: `file://${dir}/ledger`,
      },
    });
    const moq = await dialOurs(relay.port);
    try {
      const base = ingestBase(funnel);
      const put = await fetch(`${base}/v1/stream/big`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
      });
      assert.equal(put.status, 201);
      await put.body?.cancel();
      const sub = moq.subscribe("big", "stream");
      await within(sub.ready, 10_000, "the relay's subscription");
      const sizes: number[] = [];
      const reading = (async () => {
        for await (const g of sub) {
          const record = JSON.parse(new TextDecoder().decode(g.frames[0]!));
          if (typeof record.bytes !== "string") continue; // the stream's creation
          sizes.push(Uint8Array.fromBase64(record.bytes).length);
          if (sizes.length === SIZES.length) return;
        }
      })();
      for (const size of SIZES) {
        const r = await fetch(`${base}/v1/stream/big`, {
          method: "POST",
          headers: { "content-type": "application/octet-stream" },
          body: new Uint8Array(size).fill(0x61),
        });
        assert.equal(r.status, 204, await r.text());
      }
      await within(reading, 60_000, "every append through the relay");
      assert.deepEqual(sizes.toSorted((a, b) => a - b), SIZES.toSorted((a, b) => a - b));
    } finally {
      moq.close(0, "");
      await funnel.kill();
      await relay.stop();
      await Deno.remove(files.dir, { recursive: true });
    }
  });
});
