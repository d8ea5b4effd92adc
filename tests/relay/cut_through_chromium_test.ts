// @moq/net in Chromium reads a group frame by frame through the relay over
// WebSocket (WebTransport deleted): each frame reaches the page while the
// publisher has not written the next one. (With WebTransport left in place,
// @moq/net in this headless Chromium still ends up on a WebSocket session, so
// a WebTransport variant would not test WebTransport; it is not here yet.)
import assert from "node:assert/strict";
import { LiveFrames, TrackProducer } from "../../src/moq/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import {
  chromiumMissing,
  launchChromium,
  serveMoqNetPage,
  trustKeyFlag,
} from "../support/chromium.ts";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startTestRelay } from "../support/test_relay.ts";

const enc = new TextEncoder();

for (const transport of ["WebSocket"] as const) {
  Deno.test({
    name: `Chromium (${transport}) reads a group's frames as the publisher writes them`,
    ignore: ignoreWithout("Chromium", chromiumMissing),
    sanitizeOps: false, // playwright's driver keeps internal timers and pipes
    sanitizeResources: false,
    fn: async () => {
      using _q = quiet();
      const c = await testCertificate();
      const page$ = await serveMoqNetPage();
      const t = await startTestRelay({ cors: [page$.origin] });
      const browser = await launchChromium([await trustKeyFlag(c.keyPem)]);
      const producer = new TrackProducer();
      const pub = await dialOurs(t.port, { moq: { serve: () => producer } });
      try {
        pub.announce("live/cam");
        const page = await browser.context.newPage();
        await page.goto(page$.origin);
        await page.waitForFunction(() => "Moq" in globalThis);
        await page.evaluate(async ([url, webSocket]) => {
          // deno-lint-ignore no-explicit-any
          const g = globalThis as any;
          if (webSocket) delete g.WebTransport;
          g.conn = await g.Moq.Connection.connect(new URL(url));
          g.sub = g.conn.consume(g.Moq.Path.from("live/cam")).track("video").subscribe({
            priority: 0,
          });
          g.warmed = false;
          (async () => {
            const group = await g.sub.recvGroup();
            await group.readFrame();
            g.warmed = true;
          })();
        }, [`https://localhost:${t.port}/`, transport === "WebSocket"] as const);
        const f = families(await (await t.get("/metrics")).text());
        const label = { transport: transport.toLowerCase(), class: "client" };
        const sessions = sampleValue(f, "sluice_relay_sessions_total", label);
        assert.equal(sessions, 1, `the page's session is a ${transport} one`);
        // The subscription starts at the latest group: write until the page has one.
        // deno-lint-ignore no-explicit-any
        const warmed = () => page.evaluate(() => (globalThis as any).warmed as boolean);
        let seq = 0;
        while (!(await warmed())) {
          assert.ok(seq < 500, "the page never received a group");
          producer.writeGroup(++seq, enc.encode("warm"));
          await new Promise((r) => setTimeout(r, 20));
        }

        const group = new LiveFrames(0n);
        group.push(enc.encode("f1"));
        producer.writeGroup(++seq, group);
        const first = await page.evaluate(async (seq) => {
          // deno-lint-ignore no-explicit-any
          const g = globalThis as any;
          let grp = await g.sub.recvGroup();
          while (grp && grp.sequence < seq) grp = await g.sub.recvGroup();
          g.group = grp;
          const frame = await grp.readFrame();
          return { sequence: grp.sequence, text: new TextDecoder().decode(frame.payload) };
        }, seq);
        assert.deepEqual(first, { sequence: seq, text: "f1" });
        assert.equal(group.frames.length, 1, "frame 2 not written yet");
        const nextFrame = () =>
          page.evaluate(async () => {
            // deno-lint-ignore no-explicit-any
            const frame = await (globalThis as any).group.readFrame();
            return frame ? new TextDecoder().decode(frame.payload) : null;
          });
        group.push(enc.encode("f2"));
        assert.equal(await nextFrame(), "f2");
        group.push(enc.encode("f3"));
        assert.equal(await nextFrame(), "f3");
        group.finish();
        assert.equal(await nextFrame(), null, "the group ends when the publisher finished it");
      } finally {
        pub.close();
        await browser.close();
        await t.stop();
        await page$.stop();
      }
    },
  });
}
