// Headless Chromium with window.WebTransport removed: @moq/net falls back to
// QMux over wss:// (Chromium's own WebSocketStream) and publishes and
// subscribes through the relay next to native-QUIC peers on the same tracks.
// The relay's development certificate is trusted through a command-line flag.
import assert from "node:assert/strict";
import { TrackProducer } from "../../src/moq/mod.ts";
import { families, sampleValue } from "../metrics/exposition.ts";
import { testCertificate } from "../support/certs.ts";
import {
  chromiumMissing,
  launchChromium,
  serveMoqNetPage,
  trustKeyFlag,
} from "../support/chromium.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startTestRelay } from "./_relay.ts";

const GROUPS = 300;
const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test({
  name: "Chromium without WebTransport reaches the relay over wss://: 300 groups each way",
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
  fn: async () => {
    using _q = quiet();
    const c = await testCertificate();
    const page$ = await serveMoqNetPage();
    const t = await startTestRelay({ cors: [page$.origin] });
    const browser = await launchChromium([await trustKeyFlag(c.keyPem)]);
    const producer = new TrackProducer({ cache: 8 });
    const quicPub = await dialOurs(t.port, { moq: { serve: () => producer } });
    const quicSub = await dialOurs(t.port);
    try {
      const page = await browser.context.newPage();
      await page.goto(page$.origin);
      await page.waitForFunction(() => "Moq" in globalThis);
      const how = await page.evaluate(async (url) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        // No WebTransport: @moq/net must fall back to its WebSocket transport at once.
        delete g.WebTransport;
        g.conn = await g.Moq.Connection.connect(new URL(url));
        return { version: g.conn.version, webSocketStream: "WebSocketStream" in g };
      }, `https://localhost:${t.port}/`);
      assert.equal(how.version, "moq-lite-05");
      // @moq/qmux then runs on Chromium's own WebSocketStream (real send back-pressure).
      assert.equal(how.webSocketStream, true);
      let f = families(await (await t.get("/metrics")).text());
      assert.equal(
        sampleValue(f, "sluice_relay_sessions_total", { transport: "websocket", class: "client" }),
        1,
        "the browser's session is a WebSocket one",
      );

      // Our native-QUIC publisher's track: the browser (WebSocket) and a QUIC subscriber.
      quicPub.announce("quic/cam");
      await seeAnnounced(quicSub, "quic/cam");
      const ourSub = quicSub.subscribe("quic/cam", "t");
      await ourSub.ready;
      const browserReading = page.evaluate(async (n) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const sub = g.conn.consume(g.Moq.Path.from("quic/cam")).track("t").subscribe({
          priority: 1,
        });
        const got: number[] = [];
        while (got.length < n) {
          const group = await sub.recvGroup();
          if (!group) break;
          const frame = await group.readFrame();
          const text = new TextDecoder().decode(frame.payload);
          if (text !== `q${group.sequence}`) throw new Error(`group ${group.sequence}: ${text}`);
          got.push(group.sequence);
        }
        sub.close();
        return got;
      }, GROUPS);
      // The browser subscribes in the background and starts at the latest group: keep
      // writing, paced, until it has GROUPS consecutive ones.
      let done = false;
      void browserReading.finally(() => (done = true)).catch(() => {});
      const ourGot: number[] = [];
      const ourIt = ourSub[Symbol.asyncIterator]();
      for (let seq = 1; !done; seq++) {
        producer.writeGroup(seq, enc.encode(`q${seq}`));
        const r = await ourIt.next();
        assert.equal(dec.decode(r.value!.frames[0]), `q${seq}`);
        ourGot.push(r.value!.sequence);
        await new Promise((r) => setTimeout(r, 1));
      }
      const got = await browserReading;
      assert.equal(got.length, GROUPS);
      for (let i = 1; i < got.length; i++) assert.equal(got[i], got[i - 1]! + 1, "consecutive");
      assert.ok(ourGot.length >= GROUPS);

      // The browser publishes over WebSocket; our QUIC subscriber reads every group.
      await page.evaluate((n) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const broadcast = new g.Moq.Broadcast.Producer();
        const track = broadcast.createTrack("data");
        g.conn.publish(g.Moq.Path.from("browser/cam"), broadcast);
        let written = 0;
        g.publishing = setInterval(() => {
          if (written++ >= n + 50) return clearInterval(g.publishing);
          const group = track.appendGroup();
          group.writeString(`b${group.sequence}`);
          group.close();
        }, 2);
      }, GROUPS);
      await seeAnnounced(quicSub, "browser/cam", "browser");
      const sub = quicSub.subscribe("browser/cam", "data");
      await sub.ready;
      const fromBrowser: number[] = [];
      for await (const g of sub) {
        assert.equal(dec.decode(g.frames[0]), `b${g.sequence}`);
        fromBrowser.push(g.sequence);
        if (fromBrowser.length >= GROUPS) break;
      }
      for (let i = 1; i < fromBrowser.length; i++) {
        assert.equal(fromBrowser[i], fromBrowser[i - 1]! + 1, "consecutive from the browser");
      }
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        clearInterval(g.publishing);
        g.conn.close();
      });
      f = families(await (await t.get("/metrics")).text());
      assert.equal(
        sampleValue(f, "sluice_relay_sessions_total", { transport: "websocket", class: "client" }),
        1,
      );
    } finally {
      quicPub.close(0, "");
      quicSub.close(0, "");
      await browser.close();
      await t.stop();
      await page$.stop();
    }
  },
});
