// `sluice funnel` as a real process on a fresh machine: no certificate files,
// so the MoQ listener serves a generated one whose SHA-256 the summary shows.
import assert from "node:assert/strict";
import { connect, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { take } from "../../support/live_funnel.ts";
import { spawnServer } from "../../support/processes.ts";

Deno.test("sluice funnel without certificate files serves MoQ with a generated certificate and shows the real Serve address", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-funnel-" });
  const p = spawnServer("funnel", {
    env: { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "127.0.0.1:0" },
    cwd: dir,
  });
  const out = p.lines;
  try {
    await p.ready();
    const serve = out.find((l) => l.startsWith("Serve:"));
    assert.ok(serve, out.join("\n"));
    const m = /moqt:\/\/127\.0\.0\.1:(\d+) .*sha256 ([0-9a-f]{64}) \(generated/.exec(serve);
    assert.ok(m, serve);
    assert.ok(
      p.stderrLines.some((l) => l.includes(`sha256 ${m[2]}`)),
      "the log names the certificate hash",
    );
    const ingest = /Ingest: (http:\/\/\S+)/.exec(out.join("\n"))![1]!;
    assert.equal(out.find((l) => l.startsWith("Relay:")), "Relay: none");

    const sha = new Uint8Array(m[2]!.match(/../g)!.map((h) => parseInt(h, 16)));
    const moq = await connect(
      await connectQuicSession(new URL(`moqt://localhost:${m[1]}/`), {
        alpn: VERSIONS,
        serverCertificateHashes: [{ algorithm: "sha-256", value: sha }],
      }),
    );
    try {
      const put = await fetch(`${ingest}/tracks/demo/feed`, { method: "PUT" });
      assert.equal(put.status, 201);
      await put.body?.cancel();
      const sub = moq.subscribe("demo", "feed");
      await sub.ready;
      const posted = await fetch(`${ingest}/tracks/demo/feed`, {
        method: "POST",
        body: '{"hi":1}',
      });
      assert.equal(posted.status, 201);
      await posted.body?.cancel();
      assert.deepEqual(await take(sub, 1), [{ seq: 1, frame: '{"payload":{"hi":1}}' }]);
    } finally {
      moq.close(0, "");
    }
  } finally {
    const status = await p.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, out.join("\n"));
  }
});
