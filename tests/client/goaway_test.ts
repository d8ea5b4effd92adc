// A relay process that stops (SIGTERM) sends GOAWAY naming another relay
// (over native QUIC, or over WebSocket for networks that drop UDP): the
// funnel and the feed both move there, the feed subscribing before it
// leaves, and every record arrives once, in order.
import assert from "node:assert/strict";
import { openFeed } from "../../src/client/mod.ts";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { testCertificate, testCertificateFiles } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, Sender } from "./_feed.ts";
import { RestartableServer } from "./_servers.ts";

for (const scheme of ["moqt", "wss"] as const) {
  Deno.test(`a relay stopping with GOAWAY and a ${scheme}:// redirect: the feed moves without a reconnect, every record once`, async () => {
    using _q = quiet();
    const files = await testCertificateFiles();
    const cert = await testCertificate();
    const tls = { CERT_FILE: files.cert, KEY_FILE: files.key };
    const [w, x, http] = [freeUdpTcpPort(), freeUdpTcpPort(), freeUdpTcpPort()];
    const stay = new RestartableServer(
      "relay",
      { RELAY_ADDR: `127.0.0.1:${w}`, ...tls },
      "listening",
    );
    const leave = new RestartableServer("relay", {
      RELAY_ADDR: `127.0.0.1:${x}`,
      GOAWAY_REDIRECT_URI: `${scheme}://localhost:${w}/`,
      ...tls,
    }, "listening");
    const funnel = new RestartableServer("funnel", {
      FUNNEL_ADDR: `127.0.0.1:${http}`,
      FUNNEL_SERVE_ADDR: "none",
      LEDGER_URI: `file://${files.dir}/ledger`,
      RELAY_URL: `moqt://localhost:${x}/`,
      RELAY_CA_FILE: files.cert,
      ...tls,
    }, "Auth:");
    await stay.start();
    await leave.start();
    await funnel.start();
    const track = `http://127.0.0.1:${http}/tracks/room/1/chat`;
    const sender = new Sender(track);
    const reader = new Reader(openFeed({
      track,
      moq: `moqt://localhost:${x}/`,
      from: "start",
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      // A WebSocket cannot pin a certificate by hash: the redirect over wss:// needs the root.
      caCerts: [cert.certPem],
    }));
    try {
      const liveAt = await reader.reaches("live");
      await sender.more(20);
      const stopping = leave.kill("SIGTERM");
      await sender.more(40);
      await stopping;
      await sender.more(20);
      await sender.stop();
      const ledger = await ledgerEntries(track);
      await reader.has(ledger.at(-1)!.group);
      assertSameGroups(reader.records, ledger.map((e) => e.group));
      const after = reader.states.filter((s) => s.at > liveAt).map((s) => s.state);
      assert.ok(!after.includes("connecting"), `moved before leaving: ${after.join(", ")}`);
    } finally {
      await sender.stop();
      await reader.close();
      await funnel.kill();
      await leave.kill();
      await stay.kill();
      await Deno.remove(files.dir, { recursive: true });
    }
  });
}
