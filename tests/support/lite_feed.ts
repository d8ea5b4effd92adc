// Publishing and subscribing between our moq session and an @moq/lite 0.2.2 connection
// (moq-lite-04), both ways: shared by the interop tests over native QUIC and over QMux.
import assert from "node:assert/strict";
import * as Lite from "@moq/lite";
import type { MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { seeAnnounced } from "./moq.ts";

/** An @moq/lite connection. */
export type LiteConn = Awaited<ReturnType<typeof Lite.Connection.connect>>;

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Publishes `groups` groups from us (at most `ahead` in front of their reader); they get all. */
export async function weServeThem(
  ours: MoqSession,
  producer: TrackProducer,
  theirs: LiteConn,
  groups: number,
  ahead = Infinity,
): Promise<void> {
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
    while (received.length < groups) {
      const g = await sub.recvGroup();
      if (!g) break;
      assert.equal(dec.decode(await g.readFrame()), `g${g.sequence}`);
      received.push(g.sequence);
    }
  })();
  for (let seq = 2; seq < groups + 2; seq++) {
    producer.writeGroup(seq, enc.encode(`g${seq}`));
    if (seq % 8 === 0) await new Promise((r) => setTimeout(r, 0));
    while (seq - 1 - received.length > ahead) await new Promise((r) => setTimeout(r, 1));
  }
  await reading;
  sub.close();
  assert.equal(new Set(received).size, groups);
}

/** They publish `groups` groups; we see the announcement and read every group. */
export async function theyServeUs(
  ours: MoqSession,
  theirs: LiteConn,
  groups: number,
): Promise<void> {
  const broadcast = new Lite.Broadcast();
  theirs.publish(Lite.Path.from("peer/cam"), broadcast);
  await seeAnnounced(ours, "peer/cam", "peer");
  const sub = ours.subscribe("peer/cam", "data");
  const request = await broadcast.requested();
  assert.equal(request?.track.name, "data");
  const track = request!.track;
  await sub.ready;
  const got = new Set<number>();
  let writer: Promise<void> | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const g0 = track.appendGroup();
  g0.writeString(`x${g0.sequence}`);
  g0.close();
  for await (const g of sub) {
    assert.equal(dec.decode(g.frames[0]), `x${g.sequence}`);
    got.add(g.sequence);
    writer ??= (async () => {
      for (let i = 1; i <= groups; i++) {
        const g = track.appendGroup();
        g.writeString(`x${g.sequence}`);
        g.close();
        if (i % 8 === 0) await new Promise((r) => setTimeout(r, 0));
      }
      // Streams of newer groups may overtake older ones: give the stragglers 10 s.
      deadline = setTimeout(() => sub.close(), 10_000);
    })();
    if (got.size === groups + 1) break;
  }
  await writer;
  clearTimeout(deadline);
  assert.equal(got.size, groups + 1, `received ${got.size} of ${groups + 1}`);
  broadcast.close();
}
