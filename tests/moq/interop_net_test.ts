/**
 * Interop with independent peers over native QUIC: @moq/net 0.3.x speaks
 * lite-05 and lite-04. Both directions of dialing, publishing, subscribing
 * and announcing.
 */
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import type { MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { ourFeedServer, theirFeedServer } from "./_pair.ts";

const GROUPS = 1000;

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
  await seeAnnounced(ours, "peer/cam", "peer");
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
    using _ = quiet();
    const server = await ourFeedServer(version);
    const theirs = await Net.Connection.connect(server.url, {
      transport: server.quic as unknown as WebTransport,
    });
    const ours = await server.ours;
    assert.equal(theirs.version, version);
    assert.equal(ours.version, version);
    await weServeThem(ours, server.producer, theirs);
    await theyServeUs(ours, theirs);
    theirs.close();
    await ours.closed;
    server.stop();
  });

  Deno.test(`@moq/net ${version}: our client ⇄ their server`, async () => {
    using _ = quiet();
    const { producer, ours, theirs, stop } = await theirFeedServer(
      version,
      (conn, url) => Net.Connection.accept(conn as unknown as WebTransport, url),
      "/?jwt=x",
    );
    assert.equal(theirs.version, version);
    await weServeThem(ours, producer, theirs);
    await theyServeUs(ours, theirs);
    ours.close(0, "done");
    await theirs.closed.catch(() => {});
    stop();
  });
}
