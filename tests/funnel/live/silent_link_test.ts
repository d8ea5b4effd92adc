// The funnel's relay session over a link that goes silent (a userspace UDP
// proxy drops everything both ways): the idle timeout notices it, the funnel
// redials, and once the link is back records flow again. A quiet but healthy
// link is kept up by keep-alives. Native QUIC and WebTransport alike.
import assert from "node:assert/strict";
import type { RelayState } from "../../../src/funnel/mod.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startUdpProxy } from "../../support/udp_proxy.ts";
import { until } from "../../support/wait.ts";
import { post, send, startLiveFunnel, take } from "../../support/live_funnel.ts";

// An idle timeout of 1.5 s (shipped IDLE_TIMEOUT_MS, 1 s) and a redial after 200 ms (shipped 2 s):
// the noticing and redialing are tested, at any length; publisher_outage_test.ts silences a
// funnel's link at the shipped timings and checks that no acknowledged record is lost.
const IDLE_MS = 1500;

for (const scheme of ["moqt", "https"] as const) {
  Deno.test(`${scheme} relay session: a silent link is noticed within the idle timeout and redialed`, async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const files = await testCertificateFiles();
    const proxy = startUdpProxy({ targetPort: relay.port, seed: 3 });
    const states: { state: RelayState; at: number }[] = [];
    const funnel = await startLiveFunnel({
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `${scheme}://localhost:${proxy.port}/`,
      RELAY_CA_FILE: files.cert,
    }, {
      live: {
        relayIdleTimeoutMs: IDLE_MS,
        redialMs: 200,
        onRelayState: (state) => states.push({ state, at: performance.now() }),
      },
    });
    const connected = () => states.filter((s) => s.state === "connected").length;
    try {
      assert.equal(await send(funnel.base, "PUT", "/tracks/room/1/chat"), 201);
      await until(() => connected() === 1, "the first relay session");
      // A quiet, healthy link: keep-alives hold the session for three idle timeouts.
      await new Promise((r) => setTimeout(r, 3 * IDLE_MS));
      assert.deepEqual(states.map((s) => s.state), ["connecting", "connected"]);

      // The link goes silent both ways.
      proxy.reshape("toTarget", { silent: true });
      proxy.reshape("toClient", { silent: true });
      const silentAt = performance.now();
      await until(
        () => states.some((s) => s.state === "reconnecting"),
        "the silence to be noticed",
      );
      const noticedMs = states.find((s) => s.state === "reconnecting")!.at - silentAt;
      console.log(`${scheme}: silent link noticed after ${Math.round(noticedMs)} ms`);
      assert.ok(noticedMs < IDLE_MS + 2000, `noticed after ${noticedMs} ms`);
      assert.ok(noticedMs >= IDLE_MS / 2, `noticed after only ${noticedMs} ms`);

      // Records are committed meanwhile; once the link is back the funnel redials.
      assert.equal((await post(funnel.base, "room/1/chat", '{"during":1}')).status, 201);
      proxy.reshape("toTarget", {});
      proxy.reshape("toClient", {});
      await until(() => connected() === 2, "the redial");
      const moq = await dialOurs(relay.port);
      try {
        await seeAnnounced(moq, "room/1");
        const sub = moq.subscribe("room/1", "chat");
        await sub.ready;
        const after = await post(funnel.base, "room/1/chat", '{"after":1}');
        assert.equal(after.status, 201);
        const seq = Number(after.group.split("-g")[1]) + 1;
        let got = await take(sub, 1);
        // The subscription starts at the latest record, which may still be the one
        // committed during the silence.
        if (got[0]!.seq !== seq) got = await take(sub, 1);
        assert.deepEqual(got, [{ seq, frame: '{"payload":{"after":1}}' }]);
      } finally {
        moq.close(0, "done");
      }
    } finally {
      await funnel[Symbol.asyncDispose]();
      await proxy.close();
      await relay.stop();
      await Deno.remove(files.dir, { recursive: true });
    }
  });
}
