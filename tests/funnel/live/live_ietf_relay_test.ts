// The funnel publishes through a relay over IETF MoQ Transport
// (RELAY_VERSION=moqt-20, moqt-16 or moq-00): it dials with only that draft's
// token, announces its broadcast with PUBLISH_NAMESPACE, pushes each track
// with PUBLISH (drafts 16 and 20) and serves the relay's SUBSCRIBE (draft 14)
// or the push it forwards; an @moq/net subscriber of the same draft at the
// relay gets every record in order.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialNetIetf } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { until, within } from "../../support/wait.ts";
import { post, send, startLiveFunnel, takeNet } from "../../support/live_funnel.ts";

const TOKEN = { 14: "moq-00", 16: "moqt-16", 20: "moqt-20" } as const;

const CASES = [
  [14, "moqt"],
  [16, "moqt"],
  [20, "moqt"],
  [20, "https"],
  [16, "wss"],
] as const;
const TRANSPORT = { moqt: "native QUIC", https: "WebTransport", wss: "WebSocket" } as const;

for (const [draft, scheme] of CASES) {
  Deno.test(`funnel: RELAY_VERSION=${TOKEN[draft]} over ${TRANSPORT[scheme]}: records reach a draft-${draft} subscriber at the relay`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const files = await testCertificateFiles();
    await using f = await startLiveFunnel({
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `${scheme}://localhost:${relay.port}/`,
      RELAY_CA_FILE: files.cert,
      RELAY_VERSION: TOKEN[draft],
    });
    const net = await dialNetIetf(relay.port, draft);
    try {
      assert.match(
        f.funnel.summary.find((l) => l.startsWith("Relay:"))!,
        new RegExp(`${TRANSPORT[scheme]}, IETF MoQ Transport draft ${draft};`),
      );
      await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
      assert.equal(f.funnel.live.relay?.session?.version, `moq-transport-${draft}`);
      assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
      const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
      // The subscription starts at the live edge: probe until a record arrives.
      const probing = setInterval(() => void post(f.base, "room/1/chat", '"probe"'), 100);
      try {
        await within(sub.recvGroup(), 10_000, "a probe record");
      } finally {
        clearInterval(probing);
      }
      const bodies = ['"one"', '"two"', '"three"'];
      for (const body of bodies) {
        assert.equal((await post(f.base, "room/1/chat", body)).status, 201);
      }
      // Probes still in flight come first; then the three, in order, bytes equal.
      const seen: Array<{ seq: number; frame: string }> = [];
      await within(
        (async () => {
          while (!seen.some((g) => g.frame === '{"payload":"three"}')) {
            seen.push(...await takeNet(sub, 1));
          }
        })(),
        10_000,
        "the records",
      );
      const records = seen.filter((g) => g.frame !== '{"payload":"probe"}');
      assert.deepEqual(records.map((g) => g.frame), bodies.map((b) => `{"payload":${b}}`));
      assert.deepEqual(records.map((g) => g.seq), [0, 1, 2].map((i) => records[0]!.seq + i));
      // Drafts 16 and 20: the track was pushed (PUBLISH), and the relay served the subscriber
      // from the push (forwarded by REQUEST_UPDATE) without a SUBSCRIBE of its own. Draft 14
      // sends no PUBLISH: the relay SUBSCRIBEd.
      const stats = f.funnel.live.relay!.session!.stats;
      assert.equal(stats.tracksPushed, draft === 14 ? 0 : 1, "served through the push");
      assert.equal(stats.subscriptionsOpened, 1, "one subscription in all");
      sub.close();
    } finally {
      net.close();
      await relay.stop();
      await Deno.remove(files.dir, { recursive: true });
    }
  });
}
