/**
 * Cut-through at the session level: groups handed over at their first frame
 * (`partial`, for a subscription or a FETCH), the size budgets against a
 * publisher that never ends its groups, and expiry by the subscriber's max
 * latency.
 */
import assert from "node:assert/strict";
import {
  accept,
  connect,
  LiveFrames,
  type MoqSession,
  type MoqSessionOptions,
  type ReceivedGroup,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { encodeGroupStreamHeader } from "../../../src/moq/codec/mod.ts";
import { FRAME_COST, STALL_MS } from "../../../src/moq/track/receive_budget.ts";
import { Encoder } from "../../../src/wire/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { quicPair } from "../../support/quic_pair.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { until, within } from "../../support/wait.ts";

const FRAME = new Uint8Array(400);
// Room for two FRAMEs and a bit, not three: each frame counts FRAME_COST besides its payload.
const BUDGET = 1000 + 4 * FRAME_COST;

interface Pair {
  publisher: MoqSession;
  subscriber: MoqSession;
  stop(): Promise<void>;
}

// Our publisher serves `producer` as feed/t; our subscriber takes `options` (its budgets).
async function pair(
  producer: TrackProducer,
  options: MoqSessionOptions = {},
): Promise<Pair & { raw: Session }> {
  const quic = await quicPair("moq-lite-05");
  const publisherP = accept(quic.server, { serve: () => producer, log: () => {} });
  const subscriber = await connect(quic.client, { log: () => {}, ...options });
  const publisher = await publisherP;
  return {
    publisher,
    subscriber,
    raw: quic.server,
    stop: async () => {
      subscriber.close();
      publisher.close();
      await quic.stop();
    },
  };
}

async function next(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await it.next();
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}

async function ended(live: LiveFrames): Promise<void> {
  while (live.state === "open") await live.changed();
}

Deno.test("cut-through: a group over the group budget is reset; the subscription goes on", async () => {
  const producer = new TrackProducer();
  const p = await pair(producer, { maxGroupSize: 1000 });
  try {
    const it = p.subscriber.subscribe("feed", "t", { partial: true })[Symbol.asyncIterator]();
    producer.writeGroup(1, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 1);
    // A publisher that keeps writing one group: past 1000 bytes the subscriber resets it.
    const hostile = new LiveFrames(0n);
    hostile.push(FRAME);
    producer.writeGroup(2, hostile);
    const got = await next(it);
    assert.equal(got.sequence, 2);
    for (let i = 0; i < 5; i++) hostile.push(FRAME);
    await ended(got.live!);
    assert.equal(got.live!.state, "reset");
    assert.ok(got.frames.length <= 2, `held ${got.frames.length} frames`);
    await until(() => p.subscriber.stats.protocolErrors === 1, "the reset counted");
    producer.writeGroup(3, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 3);
  } finally {
    await p.stop();
  }
});

Deno.test("cut-through: a group past the session's budget waits for room and then arrives whole", async () => {
  const producer = new TrackProducer();
  // A budget of 1000 payload bytes and four frames (rather than 128 MiB of frames) shows the
  // wait; the default is exercised by tests/funnel/live/track_cache_bytes_test.ts with 21 MiB
  // frames.
  const p = await pair(producer, { maxBufferedBytes: BUDGET });
  try {
    const it = p.subscriber.subscribe("feed", "t", { partial: true })[Symbol.asyncIterator]();
    producer.writeGroup(1, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 1);
    // Groups not finished yet: 800 bytes, then a second whose next frame does not fit.
    const open = [new LiveFrames(0n), new LiveFrames(0n)];
    open[0]!.push(FRAME);
    producer.writeGroup(2, open[0]!);
    const first = await next(it);
    open[0]!.push(FRAME);
    while (first.frames.length < 2) await first.live!.changed();
    open[1]!.push(new Uint8Array(100));
    producer.writeGroup(3, open[1]!);
    const second = await next(it);
    open[1]!.push(FRAME);
    open[1]!.finish();
    // The second's 400-byte frame waits (flow control holds it at the publisher) ...
    assert.equal(second.frames.length, 1);
    assert.equal(second.live!.state, "open");
    // ... until the first ends and releases its bytes: then it arrives, nothing lost.
    open[0]!.finish();
    await ended(first.live!);
    await ended(second.live!);
    assert.equal(first.live!.state, "done");
    assert.equal(second.live!.state, "done");
    assert.deepEqual(second.frames.map((f) => f.length), [100, 400]);
    producer.writeGroup(4, FRAME);
    assert.equal((await next(it)).sequence, 4);
  } finally {
    await p.stop();
  }
});

Deno.test("cut-through: groups that all wait for each other's room: the newest is reset, the rest go on", async () => {
  const producer = new TrackProducer();
  // A small budget: see the test above.
  const p = await pair(producer, { maxBufferedBytes: BUDGET });
  try {
    const it = p.subscriber.subscribe("feed", "t", { partial: true })[Symbol.asyncIterator]();
    producer.writeGroup(1, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 1);
    // Two open groups hold 800 between them; each then sends a frame only the other's end
    // would make room for. A hostile publisher never ends either.
    const open = [new LiveFrames(0n), new LiveFrames(0n)];
    open[0]!.push(FRAME);
    producer.writeGroup(2, open[0]!);
    const first = await next(it);
    open[1]!.push(FRAME);
    producer.writeGroup(3, open[1]!);
    const second = await next(it);
    open[0]!.push(FRAME);
    open[1]!.push(FRAME);
    // Whichever waits last is refused; its release lets the other finish its frame.
    while (first.live!.state === "open" && second.live!.state === "open") {
      await Promise.race([first.live!.changed(), second.live!.changed()]);
    }
    const [reset, alive] = first.live!.state === "reset" ? [first, second] : [second, first];
    assert.equal(reset.live!.state, "reset");
    while (alive.frames.length < 2) await alive.live!.changed();
    assert.equal(alive.live!.state, "open");
    open[0]!.finish();
    open[1]!.finish();
    await ended(alive.live!);
    assert.equal(alive.live!.state, "done");
    producer.writeGroup(4, FRAME);
    assert.equal((await next(it)).sequence, 4);
  } finally {
    await p.stop();
  }
});

Deno.test("cut-through: a partial FETCH answers a group being written at its first frame, within the budgets", async () => {
  const producer = new TrackProducer();
  const p = await pair(producer, { maxGroupSize: 1000 });
  const text = (g: ReceivedGroup) => g.frames.map((f) => new TextDecoder().decode(f));
  try {
    const group = new LiveFrames(0n);
    group.push(new TextEncoder().encode("f1"));
    producer.writeGroup(1, group);
    const got = await p.subscriber.fetch("feed", "t", 1, { partial: true });
    assert.ok(got.live, "handed over while still being written");
    assert.deepEqual(text(got), ["f1"]);
    assert.equal(group.frames.length, 1, "before the publisher wrote frame 2");
    group.push(new TextEncoder().encode("f2"));
    while (got.frames.length < 2) await got.live.changed();
    group.finish();
    await ended(got.live);
    assert.equal(got.live.state, "done");
    assert.deepEqual(text(got), ["f1", "f2"]);
    // A group that grows past the group budget is reset, like a subscription's.
    const hostile = new LiveFrames(0n);
    hostile.push(FRAME);
    producer.writeGroup(2, hostile);
    const big = await p.subscriber.fetch("feed", "t", 2, { partial: true });
    for (let i = 0; i < 5; i++) hostile.push(FRAME);
    await ended(big.live!);
    assert.equal(big.live!.state, "reset");
    assert.ok(big.frames.length <= 2, `held ${big.frames.length} frames`);
    // A FETCH that wants the group whole still gets it complete.
    const whole = await p.subscriber.fetch("feed", "t", 1);
    assert.equal(whole.live, undefined);
    assert.deepEqual(text(whole), ["f1", "f2"]);
    // Cancelled once handed over: the group is reset, not taken as ended.
    const open = new LiveFrames(0n);
    open.push(FRAME);
    producer.writeGroup(3, open);
    const cancel = new AbortController();
    const left = await p.subscriber.fetch("feed", "t", 3, { partial: true, signal: cancel.signal });
    cancel.abort();
    await ended(left.live!);
    assert.equal(left.live!.state, "reset");
  } finally {
    await p.stop();
  }
});

Deno.test("expiry: groups older than the subscriber's max latency are not started, or are reset", async () => {
  const producer = new TrackProducer();
  const p = await pair(producer);
  try {
    producer.writeGroup(1, new Uint8Array(1));
    producer.writeGroup(2, new Uint8Array(1));
    await new Promise((r) => setTimeout(r, 150));
    producer.writeGroup(3, new Uint8Array(1));
    // Asks for everything from group 1 with a 100 ms max latency: 1 and 2 are too old.
    const sub = p.subscriber.subscribe("feed", "t", { start: 1, maxLatency: 100, partial: true });
    const it = sub[Symbol.asyncIterator]();
    assert.equal((await next(it)).sequence, 3);
    assert.equal(p.publisher.stats.groupsExpired, 2);

    // A group still being sent when it outlives the max latency (a newer one came) is reset.
    const slow = new LiveFrames(0n);
    slow.push(new Uint8Array(1));
    producer.writeGroup(4, slow);
    const got = await next(it);
    assert.equal(got.sequence, 4);
    producer.writeGroup(5, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 5);
    await ended(got.live!);
    assert.equal(p.publisher.stats.groupsExpired, 3);
  } finally {
    await p.stop();
  }
});

Deno.test("expiry at defaults: a subscription that names its start gets old groups however old", async () => {
  const producer = new TrackProducer();
  const p = await pair(producer);
  try {
    producer.writeGroup(1, new Uint8Array(1));
    producer.writeGroup(2, new Uint8Array(1));
    const it = p.subscriber.subscribe("feed", "t", { start: 1 })[Symbol.asyncIterator]();
    assert.equal((await next(it)).sequence, 1);
    assert.equal((await next(it)).sequence, 2);
    assert.equal(p.publisher.stats.groupsExpired, 0);
  } finally {
    await p.stop();
  }
});

// The start of a group stream for subscription `id` whose one frame declares `size` bytes
// (moq-lite-05: a timestamp delta, then the size), none of which follow.
function declaredFrame(id: bigint, sequence: number, size: number): Uint8Array {
  const header = encodeGroupStreamHeader({ subscribeId: id, sequence });
  const frame = new Encoder(16).varint(0).varint(size).finish();
  const out = new Uint8Array(header.length + frame.length);
  out.set(header);
  out.set(frame, header.length);
  return out;
}

Deno.test("cut-through: a publisher that fills the session's budget and goes quiet does not starve the session", async () => {
  const producer = new TrackProducer();
  // The subscriber's stall check runs on a clock the test moves; budgets at their defaults.
  const clock = new ManualClock();
  const p = await pair(producer, { timers: clock });
  try {
    const it = p.subscriber.subscribe("feed", "t")[Symbol.asyncIterator]();
    producer.writeGroup(1, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 1);
    // Eight group streams each declare a 16 MiB frame (the whole 128 MiB) and send none of it.
    for (let i = 0; i < 8; i++) {
      const stream = await p.raw.openUni();
      await stream.writable.getWriter().write(declaredFrame(0n, 100 + i, 16 << 20));
    }
    // An honest group of the same subscription now waits for room ...
    await new Promise((r) => setTimeout(r, 200));
    producer.writeGroup(2, new Uint8Array([2]));
    // The budget's stall check is armed only while a group waits for room.
    await until(() => clock.pending.includes(STALL_MS), "group 2 to wait for room");
    // ... until the quiet groups are found holding bytes and receiving none: reset, released.
    clock.advance(STALL_MS);
    clock.advance(STALL_MS);
    // Without the reset the group waited 30 s here (until the quiet streams were given up on
    // elsewhere); with it, well under a second.
    const got = (await within(it.next(), 10_000, "group 2")).value!;
    assert.equal(got.sequence, 2);
    assert.deepEqual([...got.frames[0]!], [2]);
  } finally {
    await p.stop();
  }
});

Deno.test("cut-through: a group abandoned part-way is not held: a FETCH of it asks fetchMissing", async () => {
  const whole = [new Uint8Array([1]), new Uint8Array([2])];
  const asked: number[] = [];
  const producer = new TrackProducer({
    cache: 8,
    fetchMissing: (sequence) => {
      asked.push(sequence);
      return Promise.resolve({ frames: whole, timestamp: 0n });
    },
  });
  const live = new LiveFrames(0n);
  live.push(new Uint8Array([1]));
  producer.writeGroup(4, live);
  assert.equal(producer.holds(4), "written");
  live.reset();
  // The cache keeps the partial group for those reading it, but it is not the group.
  assert.equal(producer.holds(4), "missing");
  const fetched = await producer.fetch(4);
  assert.deepEqual(asked, [4]);
  assert.deepEqual(fetched?.frames, whole);
  // Written again whole, it is held, and a FETCH is answered from the cache.
  assert.ok(producer.writeGroup(4, whole));
  assert.equal(producer.holds(4), "written");
  assert.deepEqual((await producer.fetch(4))?.frames, whole);
  assert.deepEqual(asked, [4]);
});
