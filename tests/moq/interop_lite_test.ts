/**
 * Interop with @moq/lite 0.2.2 (lite-04 only) over native QUIC, both
 * dialing directions, publishing, subscribing and announcing both ways.
 */
import assert from "node:assert/strict";
import * as Lite from "@moq/lite";
import type { MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { ourFeedServer, theirFeedServer } from "./_pair.ts";

const GROUPS = 1000;
const VERSION = "moq-lite-04";
const enc = new TextEncoder();
const dec = new TextDecoder();

type LiteConn = Awaited<ReturnType<typeof Lite.Connection.connect>>;

async function weServeThem(ours: MoqSession, producer: TrackProducer, theirs: LiteConn) {
  ours.announce("sluice/feed");
  const announced = theirs.announced(Lite.Path.empty());
  for (;;) {
    const e = await announced.next();
    assert.ok(e, "their announce stream ended early");
    if (e.path === "sluice/feed" && e.active) break;
  }
  announced.close();
  const sub = theirs.consume(Lite.Path.from("sluice/feed")).subscribe("records", 1);
  producer.writeGroup(1, enc.encode("g1"));
  const first = await sub.recvGroup();
  assert.equal(first?.sequence, 1);
  assert.equal(dec.decode(await first?.readFrame()), "g1");
  const received: number[] = [];
  const reading = (async () => {
    while (received.length < GROUPS) {
      const g = await sub.recvGroup();
      if (!g) break;
      assert.equal(dec.decode(await g.readFrame()), `g${g.sequence}`);
      received.push(g.sequence);
    }
  })();
  for (let seq = 2; seq < GROUPS + 2; seq++) {
    producer.writeGroup(seq, enc.encode(`g${seq}`));
    if (seq % 8 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  await reading;
  sub.close();
  assert.equal(new Set(received).size, GROUPS);
}

async function theyServeUs(ours: MoqSession, theirs: LiteConn) {
  const broadcast = new Lite.Broadcast();
  theirs.publish(Lite.Path.from("peer/cam"), broadcast);
  await seeAnnounced(ours, "peer/cam", "peer");
  const sub = ours.subscribe("peer/cam", "data");
  const request = await broadcast.requested();
  assert.equal(request?.track.name, "data");
  const track = request!.track;
  await sub.ready;
  const got: number[] = [];
  let writer: Promise<void> | undefined;
  const g0 = track.appendGroup();
  g0.writeString(`x${g0.sequence}`);
  g0.close();
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
  assert.equal(got.length, GROUPS + 1);
  broadcast.close();
}

Deno.test("@moq/lite moq-lite-04: their client ⇄ our server", async () => {
  using _ = quiet();
  const server = await ourFeedServer(VERSION);
  const theirs = await Lite.Connection.connect(server.url, {
    transport: server.quic as unknown as WebTransport,
  });
  const ours = await server.ours;
  assert.equal(theirs.version, VERSION);
  await weServeThem(ours, server.producer, theirs);
  await theyServeUs(ours, theirs);
  theirs.close();
  await ours.closed;
  server.stop();
});

Deno.test("@moq/lite moq-lite-04: our client ⇄ their server", async () => {
  using _ = quiet();
  const { producer, ours, theirs, stop } = await theirFeedServer(
    VERSION,
    (conn, url) => Lite.Connection.accept(conn as unknown as WebTransport, url),
  );
  assert.equal(theirs.version, VERSION);
  await weServeThem(ours, producer, theirs);
  await theyServeUs(ours, theirs);
  ours.close(0, "done");
  await theirs.closed.catch(() => {});
  stop();
});
