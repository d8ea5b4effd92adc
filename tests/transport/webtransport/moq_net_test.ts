/**
 * MoQ over our WebTransport: @moq/net (an independent implementation) in
 * Chromium and in Deno, and our own moq layer, on both ends of our HTTP/3
 * client and server.
 */
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { accept, connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { asWebTransport, connectWebTransport } from "../../../src/transport/webtransport/mod.ts";
import { chromiumMissing, launchChromium, serveMoqNetPage } from "../../support/chromium.ts";
import { seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { ignoreWithout } from "../../support/requires.ts";
import { startServer } from "../_server.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUPS = 200;
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

type NetConn = Awaited<ReturnType<typeof Net.Connection.connect>>;

/** Writes groups `g<seq>` until `done` resolves (the subscription starts at the latest group). */
async function keepWriting(producer: TrackProducer, done: Promise<unknown>): Promise<void> {
  let stop = false;
  done.finally(() => (stop = true)).catch(() => {});
  for (let seq = 1; !stop; seq++) {
    producer.writeGroup(seq, enc.encode(`g${seq}`));
    await tick(seq % 4 === 0 ? 1 : 0);
  }
}

/** Their subscriber reads GROUPS consecutive groups from our publisher. */
async function theyReadOurs(theirs: NetConn, producer: TrackProducer): Promise<void> {
  const sub = theirs.consume(Net.Path.from("sluice/feed")).track("records").subscribe({
    priority: 1,
  });
  const reading = (async () => {
    const got: number[] = [];
    while (got.length < GROUPS) {
      const g = await sub.recvGroup();
      assert.ok(g, "their subscription ended early");
      assert.equal(dec.decode((await g.readFrame())?.payload), `g${g.sequence}`);
      got.push(g.sequence);
    }
    return got;
  })();
  const [got] = await Promise.all([reading, keepWriting(producer, reading)]);
  sub.close();
  assert.equal(got.length, GROUPS);
  for (let i = 1; i < got.length; i++) assert.ok(got[i]! > got[i - 1]!, "groups arrive in order");
}

/** Their publisher's groups reach our subscriber. */
async function weReadTheirs(ours: MoqSession, theirs: NetConn): Promise<void> {
  const broadcast = new Net.Broadcast.Producer();
  const track = broadcast.createTrack("data");
  theirs.publish(Net.Path.from("peer/cam"), broadcast);
  await seeAnnounced(ours, "peer/cam", "peer");
  const sub = ours.subscribe("peer/cam", "data");
  await sub.ready;
  let stop = false;
  const writer = (async () => {
    while (!stop) {
      const g = track.appendGroup();
      g.writeString(`x${g.sequence}`);
      g.close();
      await tick(1);
    }
  })();
  let count = 0;
  for await (const g of sub) {
    assert.equal(dec.decode(g.frames[0]), `x${g.sequence}`);
    if (++count >= 50) break;
  }
  stop = true;
  await writer;
  broadcast.close();
  assert.equal(count, 50);
}

Deno.test("@moq/net client (over our WT client) ⇄ our moq server (over our WT server)", async () => {
  using _ = quiet();
  const t = await startServer();
  const producer = new TrackProducer({ cache: 8 });
  try {
    const serverP = (async () => {
      const s = await t.sessions.next();
      return await accept(s!, {
        serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not_found",
        // A queue of 64 (shipped 16), as feedOptions in tests/support/quic_pair.ts: every group
        // of the burst is compared.
        maxGroupQueue: 64,
      });
    })();
    const wt = await connectWebTransport(t.url("/relay"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const theirs = await Net.Connection.connect(t.url("/relay"), {
      transport: asWebTransport(wt) as unknown as WebTransport,
    });
    const ours = await serverP;
    assert.equal(theirs.version, "moq-lite-05");
    assert.equal(ours.version, "moq-lite-05");
    await theyReadOurs(theirs, producer);
    await weReadTheirs(ours, theirs);
    theirs.close();
    await ours.closed;
  } finally {
    await t.stop();
  }
});

Deno.test("our moq client (over our WT client) ⇄ @moq/net server (over our WT server)", async () => {
  using _ = quiet();
  const t = await startServer();
  try {
    const theirsP = (async () => {
      const s = await t.sessions.next();
      return await Net.Connection.accept(asWebTransport(s!) as unknown as WebTransport, s!.url!);
    })();
    const wt = await connectWebTransport(t.url("/relay?jwt=x"), {
      protocols: VERSIONS,
      serverCertificateHashes: [t.cert.sha256],
    });
    const producer = new TrackProducer({ cache: 8 });
    const ours = await connect(wt, {
      serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not_found",
      // A queue of 64 (shipped 16), as feedOptions in tests/support/quic_pair.ts: every group
      // of the burst is compared.
      maxGroupQueue: 64,
    });
    const theirs = await theirsP;
    assert.equal(theirs.version, "moq-lite-05");
    await theyReadOurs(theirs, producer);
    await weReadTheirs(ours, theirs);
    ours.close(0, "done");
    await theirs.closed.catch(() => {});
  } finally {
    await t.stop();
  }
});

Deno.test({
  name: "@moq/net in Chromium publishes and subscribes through our WebTransport server",
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
  fn: async () => {
    using _ = quiet();
    const http = await serveMoqNetPage();
    const t = await startServer();
    const producer = new TrackProducer({ cache: 8 });
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(http.origin);
      await page.waitForFunction(() => "Moq" in globalThis);
      const serverP = (async () => {
        const s = await t.sessions.next();
        return await accept(s!, {
          serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not_found",
          // A queue of 64 (shipped 16), as feedOptions in tests/support/quic_pair.ts: every group
          // of the burst is compared.
          maxGroupQueue: 64,
        });
      })();
      // The page connects with its own WebTransport (pinned hash) and keeps the connection in a global.
      const version = await page.evaluate(async ({ url, hash }) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const wt = new WebTransport(url, {
          serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
          protocols: ["moq-lite-05", "moq-lite-04"],
        } as WebTransportOptions);
        await wt.ready;
        g.conn = await g.Moq.Connection.connect(new URL(url), { transport: wt });
        return `${g.conn.version} ${(wt as unknown as { protocol: string }).protocol}`;
      }, { url: `https://127.0.0.1:${t.port}/relay`, hash: [...t.cert.sha256] });
      assert.equal(version, "moq-lite-05 moq-lite-05");
      const ours = await serverP;
      assert.equal(ours.transport.transport, "webtransport");

      // Browser subscribes to our track: GROUPS consecutive groups, in order.
      const reading = page.evaluate(async (n) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const sub = g.conn.consume(g.Moq.Path.from("sluice/feed")).track("records").subscribe({
          priority: 1,
        });
        const got: string[] = [];
        while (got.length < n) {
          const group = await sub.recvGroup();
          if (!group) break;
          const frame = await group.readFrame();
          got.push(`${group.sequence}:${new TextDecoder().decode(frame.payload)}`);
        }
        sub.close();
        return got;
      }, GROUPS);
      const [got] = await Promise.all([reading, keepWriting(producer, reading)]);
      assert.equal(got.length, GROUPS);
      for (const entry of got) {
        const [seq, payload] = entry.split(":");
        assert.equal(payload, `g${seq}`);
      }

      // Browser publishes; our server session sees the announcement and reads its groups.
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const broadcast = new g.Moq.Broadcast.Producer();
        const track = broadcast.createTrack("data");
        g.conn.publish(g.Moq.Path.from("browser/cam"), broadcast);
        g.publishing = setInterval(() => {
          const group = track.appendGroup();
          group.writeString(`b${group.sequence}`);
          group.close();
        }, 2);
      });
      await seeAnnounced(ours, "browser/cam", "browser");
      const sub = ours.subscribe("browser/cam", "data");
      await sub.ready;
      let count = 0;
      for await (const g of sub) {
        assert.equal(dec.decode(g.frames[0]), `b${g.sequence}`);
        if (++count >= 50) break;
      }
      assert.equal(count, 50);
      await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        clearInterval(g.publishing);
        g.conn.close();
      });
      const closed = await ours.closed;
      assert.equal(
        closed.dropped ?? false,
        false,
        `session ended cleanly: ${JSON.stringify(closed)}`,
      );
    } finally {
      await browser.close();
      await t.stop();
      await http.stop();
    }
  },
});
