// A feed whose relay sends the track's records as datagrams, over a lossy
// link (a userspace UDP proxy dropping a fifth of what the relay sends):
// datagrams are never retransmitted, so every lost one is a gap the feed
// repairs from the ledger. The feed still delivers every record once, in
// commit order.
import assert from "node:assert/strict";
import { type Dialer, openFeed, post } from "../../src/client/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { quiet } from "../support/quiet.ts";
import { startUdpProxy } from "../support/udp_proxy.ts";
import { assertSameGroups, ledgerEntries, Reader } from "./_feed.ts";
import { startServers } from "./_servers.ts";

const RECORDS = 60;

Deno.test({
  name: "records sent as datagrams over a lossy link: lost ones are repaired, none twice, in order",
  fn: async () => {
    using _q = quiet();
    await using s = await startServers({
      relay: true,
      relayEnv: { RELAY_DATAGRAM_TRACKS: "room/dgram" },
    });
    const relayPort = Number(new URL(s.https).port);
    const proxy = startUdpProxy({
      targetPort: relayPort,
      toTarget: { loss: 0.05, delayMs: 10, jitterMs: 3 },
      toClient: { loss: 0.2, delayMs: 10, jitterMs: 3, reorder: 0.02 },
      seed: 21,
    });
    const dial: Dialer = async (url, o) => {
      const via = new URL(url);
      via.port = String(proxy.port);
      return await connectQuicSession(via, {
        alpn: o.protocols,
        serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      });
    };
    const cert = await testCertificate();
    const track = s.track("dgram");
    await post(track, { n: 0 });
    const reader = new Reader(openFeed({ track, moq: s.moqt, from: "start", dial }));
    const http = Deno.createHttpClient({ caCerts: [s.certPem] });
    try {
      await reader.count(1);
      await reader.reaches("live");
      for (let n = 1; n <= RECORDS; n++) {
        await post(track, { n });
        await new Promise((r) => setTimeout(r, 5));
      }
      const ledger = await ledgerEntries(track);
      await reader.has(ledger.at(-1)!.group);
      assertSameGroups(reader.records, ledger.map((e) => e.group));
      const metrics = await fetch(`https://localhost:${relayPort}/metrics`, { client: http });
      const f = families(await metrics.text());
      const datagrams = sampleValue(f, "sluice_relay_datagram_groups_total") ?? 0;
      // The live records went as datagrams (some may have come in the catch-up instead).
      assert.ok(datagrams >= RECORDS / 2, `datagram groups ${datagrams}`);
      assert.ok(proxy.counts.toClient.dropped > 0, "the link did lose packets");
    } finally {
      await reader.close();
      http.close();
      await proxy.close();
    }
  },
});
