/**
 * Interop with independent peers over native QUIC: @moq/net 0.3.x speaks
 * lite-05 and lite-04. Both directions of dialing, publishing, subscribing
 * and announcing.
 */
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { accept, connect, type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { connectQuicSession, listenQuic } from "../../src/transport/quic.ts";
import { testCert } from "./_pair.ts";

const GROUPS = 1000;

/** The peer libraries log every request with console.debug; keep test output readable. */
function quiet(): () => void {
  const debug = console.debug;
  console.debug = () => {};
  return () => {
    console.debug = debug;
  };
}
const enc = new TextEncoder();
const dec = new TextDecoder();

type NetConn = Awaited<ReturnType<typeof Net.Connection.connect>>;

/** Publishes GROUPS groups from us and checks their subscriber gets them all, in order. */
async function weServeThem(ours: MoqSession, producer: TrackProducer, theirs: NetConn) {
  ours.announce("sluice/feed");
  const announced = theirs.announced(Net.Path.empty());
  for (;;) {
    const e = await announced.next();
    assert.ok(e, "their announce stream ended early");
    if (e.path === "sluice/feed" && e.active) break;
  }
  announced.close();
  const sub = theirs.consume(Net.Path.from("sluice/feed")).track("records").subscribe({
    priority: 1,
  });
  // The subscription starts at the latest group: write one and wait for it.
  producer.writeGroup(1, enc.encode("g1"));
  const first = await sub.recvGroup();
  assert.equal(first?.sequence, 1);
  assert.equal(dec.decode((await first?.readFrame())?.payload), "g1");
  const received: number[] = [];
  const reading = (async () => {
    while (received.length < GROUPS) {
      const g = await sub.recvGroup();
      if (!g) break;
      const frame = await g.readFrame();
      assert.equal(dec.decode(frame?.payload), `g${g.sequence}`);
      received.push(g.sequence);
    }
  })();
  for (let seq = 2; seq < GROUPS + 2; seq++) {
    producer.writeGroup(seq, enc.encode(`g${seq}`));
    // Pace in small batches so the per-subscriber queue (a real bound) is not exceeded.
    if (seq % 8 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  await reading;
  sub.close();
  assert.equal(received.length, GROUPS);
  assert.equal(new Set(received).size, GROUPS);
  assert.ok(received.at(-1)! >= GROUPS, `last group ${received.at(-1)}`);
}

/** They publish GROUPS groups; we see the announcement and read every group. */
async function theyServeUs(ours: MoqSession, theirs: NetConn) {
  const broadcast = new Net.Broadcast.Producer();
  const track = broadcast.createTrack("data");
  theirs.publish(Net.Path.from("peer/cam"), broadcast);
  const ac = new AbortController();
  for await (const e of ours.announced("peer", { signal: ac.signal })) {
    if (e.path === "peer/cam" && e.active) break;
  }
  ac.abort();
  const sub = ours.subscribe("peer/cam", "data");
  await sub.ready;
  // Their publisher starts once it has our subscription; write after it is live.
  const g0 = track.appendGroup();
  g0.writeString("x0");
  g0.close();
  const got: number[] = [];
  let writer: Promise<void> | undefined;
  for await (const g of sub) {
    assert.equal(dec.decode(g.frames[0]), `x${g.sequence}`);
    got.push(g.sequence);
    writer ??= (async () => {
      for (let i = 1; i <= GROUPS; i++) {
        const g = track.appendGroup();
        g.writeString(`x${g.sequence}`);
        g.close();
        if (i % 8 === 0) await new Promise((r) => setTimeout(r, 0));
      }
    })();
    if (g.sequence >= GROUPS) break;
  }
  await writer;
  assert.equal(got.length, GROUPS + 1, `received ${got.length} of ${GROUPS + 1}`);
  broadcast.close();
}

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`@moq/net ${version}: their client ⇄ our server`, async () => {
    using _ = { [Symbol.dispose]: quiet() };
    const cert = await testCert();
    const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: [version] });
    const producer = new TrackProducer({ cache: 8 });
    const serverP = (async () => {
      for await (const s of listener) {
        return await accept(s, {
          serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not-found",
          maxGroupQueue: 64,
        });
      }
      throw new Error("listener ended");
    })();
    const quic = await Deno.connectQuic({
      hostname: "127.0.0.1",
      port: listener.addr.port,
      alpnProtocols: [version],
      caCerts: [cert.certPem],
      serverName: "localhost",
      maxConcurrentUnidirectionalStreams: 1000,
    });
    const url = new URL(`https://localhost:${listener.addr.port}/`);
    const theirs = await Net.Connection.connect(url, {
      transport: quic as unknown as WebTransport,
    });
    const ours = await serverP;
    assert.equal(theirs.version, version);
    assert.equal(ours.version, version);
    await weServeThem(ours, producer, theirs);
    await theyServeUs(ours, theirs);
    theirs.close();
    await ours.closed;
    listener.stop();
  });

  Deno.test(`@moq/net ${version}: our client ⇄ their server`, async () => {
    using _ = { [Symbol.dispose]: quiet() };
    const cert = await testCert();
    const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
    const listener = endpoint.listen({
      cert: cert.certPem,
      key: cert.keyPem,
      alpnProtocols: [version],
      maxConcurrentUnidirectionalStreams: 1000,
    });
    const theirsP = (async () => {
      const conn = await (await listener.incoming()).accept();
      return await Net.Connection.accept(
        conn as unknown as WebTransport,
        new URL(`https://localhost:${endpoint.addr.port}/`),
      );
    })();
    const session = await connectQuicSession(
      new URL(`moqt://127.0.0.1:${endpoint.addr.port}/?jwt=x`),
      { serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }], alpn: [version] },
    );
    const producer = new TrackProducer({ cache: 8 });
    const ours = await connect(session, {
      serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not-found",
      maxGroupQueue: 64,
    });
    const theirs = await theirsP;
    assert.equal(theirs.version, version);
    await weServeThem(ours, producer, theirs);
    await theyServeUs(ours, theirs);
    ours.close(0, "done");
    await theirs.closed.catch(() => {});
    endpoint.close();
  });
}
