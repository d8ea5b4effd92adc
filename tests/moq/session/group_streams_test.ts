/**
 * A served subscription's group streams: in flight, bounded by count and by
 * payload bytes, so a subscriber that reads slowly pins at most that much of
 * groups the track's cache has let go. The first tests' transport is a stand-in whose
 * streams never take their bytes (a subscriber that stopped reading).
 */
import assert from "node:assert/strict";
import { GroupStreams } from "../../../src/moq/session/group_streams.ts";
import { RANKS, sendOrder } from "../../../src/moq/session/send_order.ts";
import { SessionSends } from "../../../src/moq/session/session_sends.ts";
import type { SessionCore } from "../../../src/moq/session/core.ts";
import { CachedGroup, LiveFrames } from "../../../src/moq/track/mod.ts";
import { MoqStats } from "../../../src/moq/stats.ts";
import { systemTimers } from "../../../src/timers/mod.ts";
import { accept, connect, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { settled, until } from "../../support/wait.ts";

const MiB = 1 << 20;

// A session whose peer never reads: every stream it opens is counted and holds its bytes. With
// `buffers`, each write is taken at once (as Deno's QUIC takes bytes into its send buffer) and
// counted in `written`, so a live group's send goes on to wait for its next frame.
// `orders` holds each stream's send order as it opened, `current` as it is now (after reorders).
function stalledCore(
  buffers = false,
  orderedPlace = 0,
): {
  core: SessionCore;
  opened: () => number;
  written: () => number;
  orders: number[];
  current: number[];
} {
  let opened = 0;
  const orders: number[] = [];
  const current: number[] = [];
  let written = 0;
  const write = (chunk: Uint8Array): Promise<void> => {
    written += chunk.length;
    return buffers ? Promise.resolve() : new Promise(() => {});
  };
  const transport = {
    openUni: (options?: { sendOrder?: number }) => {
      const index = opened++;
      orders.push(options?.sendOrder ?? 0);
      current.push(options?.sendOrder ?? 0);
      const setSendOrder = (order: number) => void (current[index] = order);
      return Promise.resolve({ writable: new WritableStream({ write }), setSendOrder });
    },
  };
  const core = {
    options: {},
    transport,
    stats: new MoqStats(),
    version: "moq-lite-05",
    timers: systemTimers,
    expiryTimers: systemTimers,
    isClosed: false,
    orderedPlace,
    orderedBase: 0,
    orderedOpen: new Set(),
    sends: new SessionSends(),
    log: () => {},
  } as unknown as SessionCore;
  return { core, opened: () => opened, written: () => written, orders, current };
}

function streams(core: SessionCore, ordered = true, firstPlace?: number): GroupStreams {
  return new GroupStreams(
    core,
    0n,
    { priority: 0, ordered, maxLatency: 0 },
    { latest: undefined, sent: () => {} },
    Date.now,
    firstPlace,
  );
}

const group = (sequence: number, bytes: number) =>
  new CachedGroup(sequence, new Uint8Array(bytes), 0, sequence);

Deno.test("group streams: ordered subscriptions of one session go oldest first across all of them", async () => {
  const { core, orders } = stalledCore(true);
  const [a, b] = [streams(core), streams(core)];
  // A long-running subscription has sent 5 groups; a new one starts catching up.
  for (let i = 0; i < 5; i++) a.send(group(i, 100));
  b.send(group(0, 100));
  a.send(group(5, 100));
  await until(() => orders.length === 7, "the 7 streams opened");
  await settled();
  // Higher orders go first: each stream started later ranks below every earlier one, whichever
  // subscription it is of (a new subscription's first group used to outrank them all).
  assert.equal(orders.length, 7);
  for (let i = 1; i < orders.length; i++) {
    assert.ok(orders[i]! < orders[i - 1]!, `stream ${i} (${orders[i]}) after ${orders[i - 1]}`);
  }
});

// The session's count of ordered group streams started far along, as on a session that has sent
// 2^21 groups (a funnel's session to its relay lives for months): the ranks run out mid-burst.
Deno.test("group streams: ordered streams stay oldest first past the end of the rank range", async () => {
  const { core, current } = stalledCore(false, RANKS - 3);
  const [a, b] = [streams(core), streams(core)];
  // Neither subscriber reads, so every stream stays open while the count passes the end.
  for (let i = 0; i < 4; i++) a.send(group(i, 100));
  for (let i = 0; i < 4; i++) b.send(group(i, 100));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(current.length, 8);
  // Higher orders go first: as they are now, each stream ranks below every stream started
  // before it (the count used to start again at 0, its rank above all of them).
  for (let i = 1; i < current.length; i++) {
    assert.ok(current[i]! < current[i - 1]!, `stream ${i} (${current[i]}) after ${current[i - 1]}`);
  }
  for (const order of current) assert.ok(order >= sendOrder(0, -(RANKS - 1)) && order <= 0);
});

Deno.test("group streams: newest-first streams stay newest first past the end of the rank range", async () => {
  const { core, current, written } = stalledCore(true);
  const s = streams(core, false, RANKS - 3);
  // Live groups, each written as it arrives: each moves the subscription's place on.
  const groups = Array.from({ length: 6 }, (_, i) => liveGroup(i, 10));
  for (const g of groups) await s.send(g.group);
  await until(() => written() >= 6 * 10, "the first frames written");
  assert.equal(current.length, 6);
  for (let i = 1; i < current.length; i++) {
    assert.ok(current[i]! > current[i - 1]!, `stream ${i} (${current[i]}) after ${current[i - 1]}`);
  }
  for (const order of current) assert.ok(order >= 0 && order <= sendOrder(0, RANKS - 1));
  for (const g of groups) g.frames.finish();
  await s.drained();
});

Deno.test("group streams: at the default 8 MiB, a second 5 MiB group waits while the first is unread", async () => {
  const { core, opened } = stalledCore();
  const s = streams(core);
  assert.equal(s.send(group(1, 5 * MiB)), undefined, "the first goes at once, however large");
  const second = s.send(group(2, 5 * MiB));
  assert.ok(second instanceof Promise, "the second waits for room");
  await settled();
  assert.equal(opened(), 1);
});

Deno.test("group streams: small groups are bounded by count (16 at the default), not bytes", async () => {
  const { core, opened } = stalledCore();
  const s = streams(core);
  for (let i = 0; i < 16; i++) assert.equal(s.send(group(i, 100)), undefined);
  assert.ok(s.send(group(16, 100)) instanceof Promise, "the 17th waits");
  await settled();
  assert.equal(opened(), 16);
});

// A group still arriving, with a first frame of `first` bytes.
function liveGroup(sequence: number, first: number): { group: CachedGroup; frames: LiveFrames } {
  const frames = new LiveFrames(0n);
  frames.push(new Uint8Array(first));
  return { group: new CachedGroup(sequence, frames, 0, sequence), frames };
}

Deno.test("group streams: a live group's frames count as they are written; the next group waits past 8 MiB", async () => {
  const { core, opened, written } = stalledCore(true);
  const s = streams(core);
  const live = liveGroup(1, 1024);
  assert.equal(s.send(live.group), undefined);
  // The reviewer's group: a 1 KiB first frame, then 8 x 1 MiB, each taken by the transport while
  // the send waits for the next. Its slot goes back at each wait; its bytes must not.
  for (let i = 0; i < 8; i++) live.frames.push(new Uint8Array(MiB));
  await until(() => written() > 8 * MiB, "the live group's frames written");
  const second = s.send(group(2, 100));
  assert.ok(second instanceof Promise, "the second waits while the live group holds 8 MiB");
  await settled();
  assert.equal(opened(), 1);
  // Its end gives the bytes back.
  live.frames.finish();
  await second;
  assert.equal(opened(), 2);
});

Deno.test("group streams: a live group's frames behind a write the peer blocks count too", async () => {
  const { core, opened, written } = stalledCore();
  const s = streams(core);
  const live = liveGroup(1, 1024);
  assert.equal(s.send(live.group), undefined);
  await until(() => written() > 0, "the first frame's write");
  // That write never completes: the frames arriving meanwhile are held by the group, not taken.
  for (let i = 0; i < 8; i++) live.frames.push(new Uint8Array(MiB));
  assert.ok(s.send(group(2, 100)) instanceof Promise, "the second waits");
  await settled();
  assert.equal(opened(), 1);
});

Deno.test("group streams: at most 64 streams open (4 x the 16 in flight), even all waiting for frames", async () => {
  const { core, opened, written } = stalledCore(true);
  const s = streams(core);
  const groups = Array.from({ length: 65 }, (_, i) => liveGroup(i, 10));
  // Each stream writes its first frame, then waits for the next, giving its slot back.
  const [first] = groups;
  const rest = groups.slice(1, 64);
  const extra = groups[64]!;
  for (const g of [first!, ...rest]) await s.send(g.group);
  await until(() => written() >= 64 * 10, "the 64 first frames written");
  const last = s.send(extra.group);
  assert.ok(last instanceof Promise, "the 65th waits for an open stream to end");
  await settled();
  assert.equal(opened(), 64);
  first!.frames.finish();
  await last;
  assert.equal(opened(), 65);
  for (const g of groups) g.frames.finish();
  await s.drained();
});

// Over a real QUIC pair: what an idle subscription holds.
for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version}: once its group streams ended, a served subscription holds no expiry timer`, async () => {
    const pair = await quicPair(version);
    // The server's timers never fire by themselves: a timer left armed stays in `pending`.
    const clock = new ManualClock();
    // The track's shipped max latency (5 s) arms the expiry timer with each group stream.
    const producer = new TrackProducer({ cache: 8 });
    const serverP = accept(pair.server, {
      timers: clock,
      serve: (r) => (r.path === "feed" && r.track === "t" ? producer : "not_found"),
    });
    const client = await connect(pair.client);
    const server = await serverP;
    try {
      const sub = client.subscribe("feed", "t");
      await sub.ready;
      producer.writeGroup(1, new TextEncoder().encode("one"));
      const it = sub[Symbol.asyncIterator]();
      assert.equal((await it.next()).value!.sequence, 1);
      // Until now an idle subscription kept its timer armed for the whole max latency: a timer
      // per subscriber session on an idle relay.
      await until(() => clock.pending.length === 0, "no timer left armed");
      // A later group arms it again, and its end clears it again.
      producer.writeGroup(2, new TextEncoder().encode("two"));
      assert.equal((await it.next()).value!.sequence, 2);
      await until(() => clock.pending.length === 0, "no timer left armed");
    } finally {
      client.close();
      server.close();
      await pair.stop();
    }
  });
}
