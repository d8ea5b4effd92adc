// A draining relay takes no new sessions: a WebTransport CONNECT and a WebSocket
// upgrade are both answered 503 before any session exists, while it still listens.
import assert from "node:assert/strict";
import { VERSIONS } from "../../../src/moq/mod.ts";
import { connectWebTransport, WebTransportRefusedError } from "../../../src/transport/mod.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { testCertificate } from "../../support/certs.ts";
import { upgradeStatus } from "../../support/qmux.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";

Deno.test("a draining relay refuses WebTransport and WebSocket sessions with 503", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  const c = await testCertificate();
  const dialWt = () =>
    connectWebTransport(new URL(`https://localhost:${t.port}/`), {
      protocols: VERSIONS,
      serverCertificateHashes: [c.sha256],
    });
  const offer = { "Sec-WebSocket-Protocol": "qmux-02.moq-lite-05" };
  // Before the drain both are admitted.
  const before = await dialWt();
  before.close(0, "");
  assert.equal(await upgradeStatus(t.port, c.certPem, "/", offer), 101);

  await t.relay.drain(1000);
  await assert.rejects(
    dialWt(),
    (e: unknown) => e instanceof WebTransportRefusedError && e.status === 503,
    "WebTransport CONNECT to a draining relay",
  );
  assert.equal(await upgradeStatus(t.port, c.certPem, "/", offer), 503);
  // Refused sessions never became sessions: only the two made before the drain count.
  const f = families(await (await t.get("/metrics")).text());
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", {
      transport: "webtransport",
      class: "client",
    }),
    1,
  );
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", {
      transport: "websocket",
      class: "client",
    }),
    1,
  );
  await t.stop();
});
