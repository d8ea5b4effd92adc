// Headless Chromium with window.WebTransport removed: @moq/net falls back to
// QMux over wss:// (Chromium's own WebSocketStream) and publishes and
// subscribes through the relay next to native-QUIC peers on the same tracks.
// The relay's development certificate is trusted through a command-line flag.
import assert from "node:assert/strict";
import { TrackProducer } from "../../src/moq/mod.ts";
import { families, sampleValue } from "../support/prometheus.ts";
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
import { until } from "../support/wait.ts";
import { startTestRelay } from "../support/test_relay.ts";

const GROUPS = 300;
const BATCH = 8;

/** What the page keeps in globals between evaluations. */
interface PageGlobals {
  got: number[];
  write(k: number): void;
  conn: { close(): void };
}
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
      // Both phases are paced by the slowest reader, BATCH groups at a time, so the
      // relay's real per-subscriber bound (GROUP_CACHE_SIZE) never skips anyone ahead.
      const ourGot: number[] = [];
      void (async () => {
        for await (const g of ourSub) {
          assert.equal(dec.decode(g.frames[0]), `q${g.sequence}`);
          ourGot.push(g.sequence);
        }
      })().catch(() => {});
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const sub = g.conn.consume(g.Moq.Path.from("quic/cam")).track("t").subscribe({
          priority: 1,
        });
        g.got = [];
        g.reading = (async () => {
          for (;;) {
            const group = await sub.recvGroup();
            if (!group) return;
            const frame = await group.readFrame();
            const text = new TextDecoder().decode(frame.payload);
            if (text !== `q${group.sequence}`) throw new Error(`group ${group.sequence}: ${text}`);
            g.got.push(group.sequence);
          }
        })();
      });
      const browserGot = () =>
        page.evaluate(() => (globalThis as unknown as PageGlobals).got.length);
      // The browser's subscription starts at the latest group: write until it has one.
      let seq = 0;
      while ((await browserGot()) === 0) {
        assert.ok(seq < 500, "the browser's subscription never received a group");
        producer.writeGroup(++seq, enc.encode(`q${seq}`));
        await new Promise((r) => setTimeout(r, 20));
      }
      // Live now: every group written from here on must reach the browser.
      const first = seq + 1;
      const seen = () => page.evaluate(() => [...(globalThis as unknown as PageGlobals).got]);
      while (seq < first + GROUPS - 1) {
        for (let i = 0; i < BATCH && seq < first + GROUPS - 1; i++) {
          producer.writeGroup(++seq, enc.encode(`q${seq}`));
        }
        const last = seq;
        await until(async () => (await seen()).includes(last), `the browser at group ${last}`);
      }
      const got = new Set(await seen());
      for (let n = first; n <= seq; n++) assert.ok(got.has(n), `the browser got group ${n}`);
      await until(() => ourGot.at(-1) === seq, "the QUIC subscriber at the last group");

      // The browser publishes over WebSocket; our QUIC subscriber reads every group.
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const broadcast = new g.Moq.Broadcast.Producer();
        const track = broadcast.createTrack("data");
        g.conn.publish(g.Moq.Path.from("browser/cam"), broadcast);
        g.write = (k: number) => {
          for (let i = 0; i < k; i++) {
            const group = track.appendGroup();
            group.writeString(`b${group.sequence}`);
            group.close();
          }
        };
      });
      await seeAnnounced(quicSub, "browser/cam", "browser");
      const sub = quicSub.subscribe("browser/cam", "data");
      await sub.ready;
      const fromBrowser = new Set<number>();
      void (async () => {
        for await (const g of sub) {
          assert.equal(dec.decode(g.frames[0]), `b${g.sequence}`);
          fromBrowser.add(g.sequence);
        }
      })().catch(() => {});
      const write = (k: number) =>
        page.evaluate((k) => (globalThis as unknown as PageGlobals).write(k), k);
      let written = 0; // @moq/net numbers groups from 0
      while (fromBrowser.size === 0) {
        assert.ok(written < 500, "our subscription never received the browser's groups");
        await write(1);
        written++;
        await new Promise((r) => setTimeout(r, 20));
      }
      // Live now: every group the browser writes from here on must reach us.
      const from = written;
      while (written < from + GROUPS) {
        const k = Math.min(BATCH, from + GROUPS - written);
        await write(k);
        written += k;
        const last = written - 1;
        await until(() => fromBrowser.has(last), `our subscriber at group ${last}`);
      }
      for (let n = from; n < written; n++) assert.ok(fromBrowser.has(n), `we got group ${n}`);
      await page.evaluate(() => (globalThis as unknown as PageGlobals).conn.close());
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
