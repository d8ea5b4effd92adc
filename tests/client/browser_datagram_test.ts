// A datagram track read by the client in headless Chromium over the browser's own WebTransport:
// the relay sends each record as a QUIC datagram, and the browser adapter must read them.
// Without a datagram reader every record would reach the page only through repair (a FETCH
// after the reorder wait), so the test counts the datagrams the page's session read.
import assert from "node:assert/strict";
import { post } from "../../src/client/mod.ts";
import { chromiumMissing, launchChromium, serveClientPage } from "../support/chromium.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { quiet } from "../support/quiet.ts";
import { ignoreWithout } from "../support/requires.ts";
import { until } from "../support/wait.ts";
import { ledgerEntries } from "./_feed.ts";
import { startServers } from "./_servers.ts";

const RECORDS = 40;

/** What the page keeps in globals between evaluations. */
interface PageGlobals {
  records: string[];
  datagrams: number;
  errors: string[];
}

Deno.test({
  name:
    "Chromium: a feed on a datagram track reads the records as datagrams, every one once, in order",
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
  fn: async () => {
    using _q = quiet();
    const page$ = await serveClientPage();
    await using s = await startServers({
      relay: true,
      relayEnv: { RELAY_DATAGRAM_TRACKS: "room/dgram" },
      funnelEnv: { CORS_ALLOWED_ORIGINS: page$.origin }, // the page reads history over HTTP
    });
    const browser = await launchChromium();
    const track = s.track("dgram");
    await post(track, { n: 0 });
    try {
      const page = await browser.context.newPage();
      page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
      await page.goto(page$.origin);
      await page.waitForFunction(() => "Sluice" in globalThis);
      await page.evaluate(({ track, moq, hash }) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        Object.assign(g, { records: [], datagrams: 0, errors: [] });
        // The client's own browser dialer, with the session's datagram reads counted.
        // deno-lint-ignore no-explicit-any
        const dial = async (url: URL, o: any) => {
          const session = await g.Sluice.connectWebTransportApi(url, {
            protocols: o.protocols,
            serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
          }).catch((e: Error) => {
            g.errors.push(`dial: ${e.message}`);
            throw e;
          });
          const read = session.readDatagram?.bind(session);
          if (read) {
            session.readDatagram = async () => {
              const d = await read();
              if (d) g.datagrams++;
              return d;
            };
          }
          return session;
        };
        const feed = g.Sluice.openFeed({ track, moq, from: "start", dial });
        feed.addEventListener("error", (e: { reason?: string }) => g.errors.push(String(e.reason)));
        (async () => {
          for await (const r of feed) g.records.push(r.group);
        })().catch((e: Error) => g.errors.push(e.message));
      }, {
        track,
        // By address: Chromium would try localhost's IPv6 address first, where the relay is not.
        moq: s.https.replace("localhost", "127.0.0.1"),
        hash: [...new Uint8Array(s.hashes[0]!.value as ArrayBuffer)],
      });
      const globals = () =>
        page.evaluate(() => {
          // deno-lint-ignore no-explicit-any
          const g = globalThis as any;
          return { records: g.records, datagrams: g.datagrams, errors: g.errors } as PageGlobals;
        });
      await until(async () => (await globals()).records.length >= 1, "the first record");
      for (let n = 1; n <= RECORDS; n++) {
        await post(track, { n });
        await new Promise((r) => setTimeout(r, 20));
      }
      const ledger = (await ledgerEntries(track)).map((e) => e.group);
      await until(async () => (await globals()).records.length >= ledger.length, "every record");
      const got = await globals();
      assert.deepEqual(got.records, ledger, "every record once, in commit order");
      using http = Deno.createHttpClient({ caCerts: [s.certPem] });
      const metrics = await fetch(new URL("/metrics", s.https), { client: http });
      const sent = sampleValue(
        families(await metrics.text()),
        "sluice_relay_datagram_groups_total",
      );
      assert.ok((sent ?? 0) >= RECORDS / 2, `the relay sent ${sent} records as datagrams`);
      // Loopback loses nothing: the live records are read as datagrams, not repaired.
      assert.ok(
        got.datagrams >= RECORDS / 2,
        `the page read ${got.datagrams} datagrams (${got.errors.join("; ")})`,
      );
    } finally {
      await browser.close();
      await page$.stop();
    }
  },
});
