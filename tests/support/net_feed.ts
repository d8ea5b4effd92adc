// Publishing and subscribing between our moq session and an @moq/net connection, both ways:
// shared by the interop tests over native QUIC and over QMux.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import type { MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { seeAnnounced } from "./moq.ts";

/** An @moq/net connection. */
export type NetConn = Awaited<ReturnType<typeof Net.Connection.connect>>;

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Publishes `groups` groups from us (at most `ahead` in front of their reader) and checks
 * their subscriber gets them all, in order.
 */
export async function weServeThem(
  ours: MoqSession,
  producer: TrackProducer,
  theirs: NetConn,
  groups: number,
  ahead = Infinity,
): Promise<void> {
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
    while (received.length < groups) {
      const g = await sub.recvGroup();
      if (!g) break;
      const frame = await g.readFrame();
      assert.equal(dec.decode(frame?.payload), `g${g.sequence}`);
      received.push(g.sequence);
    }
  })();
  for (let seq = 2; seq < groups + 2; seq++) {
    producer.writeGroup(seq, enc.encode(`g${seq}`));
    // Pace in small batches so the per-subscriber queue (a real bound) is not exceeded,
    // and stay at most `ahead` groups in front of the reader: a peer that grants stream
    // credit slowly (@moq/qmux replenishes MAX_STREAMS in halves) would otherwise make
    // our publisher skip forward, which is right for live media but not for this count.
    if (seq % 8 === 0) await new Promise((r) => setTimeout(r, 0));
    while (seq - 1 - received.length > ahead) await new Promise((r) => setTimeout(r, 1));
  }
  await reading;
  sub.close();
  assert.equal(received.length, groups);
  assert.equal(new Set(received).size, groups);
  assert.ok(received.at(-1)! >= groups, `last group ${received.at(-1)}`);
}

/** They publish `groups` groups; we see the announcement and read every group. */
export async function theyServeUs(
  ours: MoqSession,
  theirs: NetConn,
  groups: number,
): Promise<void> {
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
  const got = new Set<number>();
  let writer: Promise<void> | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
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
