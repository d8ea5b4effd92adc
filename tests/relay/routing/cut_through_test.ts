// Cut-through through the relay: a group is a stream of frames end to end.
// Each frame reaches subscribers while the publisher has not written the next
// one, a subscriber joining mid-group gets the group from its first frame,
// FETCH of a group being written answers what exists and continues (also when
// the relay forwards it upstream), and a group its publisher abandons is reset
// downstream.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import {
  LiveFrames,
  type MoqSession,
  type ReceivedGroup,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { dialNet, dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { startTestRelay, type TestRelay } from "../../support/test_relay.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PATH = "live/cam";
const TRACK = "video";

interface Fixture {
  relay: TestRelay;
  producer: TrackProducer;
  sessions: MoqSession[];
  /** Dials a subscriber of ours that has seen the broadcast. */
  subscriber(): Promise<MoqSession>;
}

// Deno's QUIC cannot reset a stream (its abort finishes it), so a test of resets dials
// over WebSocket, where QMux carries RESET_STREAM.
async function withPublisher(
  run: (f: Fixture) => Promise<void>,
  webSocket = false,
): Promise<void> {
  using _q = quiet();
  const relay = await startTestRelay();
  const producer = new TrackProducer({ cache: 8 });
  const sessions: MoqSession[] = [];
  const ws = webSocket ? { webSocket: ["qmux-02" as const] } : {};
  try {
    const pub = await dialOurs(relay.port, {
      ...ws,
      moq: { serve: (r) => (r.path === PATH && r.track === TRACK ? producer : "not_found") },
    });
    sessions.push(pub);
    pub.announce(PATH);
    await run({
      relay,
      producer,
      sessions,
      subscriber: async () => {
        const s = await dialOurs(relay.port, ws);
        sessions.push(s);
        await seeAnnounced(s, PATH);
        return s;
      },
    });
  } finally {
    for (const s of sessions) s.close();
    await relay.stop();
  }
}

// Writes a warm-up group and waits until `sub` has it, so the relay's upstream is open.
async function warm(
  producer: TrackProducer,
  it: AsyncIterator<ReceivedGroup>,
  sequence: number,
): Promise<void> {
  producer.writeGroup(sequence, enc.encode("warm"));
  assert.equal((await next(it)).sequence, sequence);
}

async function next(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await it.next();
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}

function frame(text: string): Uint8Array {
  return enc.encode(text);
}

// Waits until the group has `count` frames (it keeps arriving as they do).
async function framesIn(live: LiveFrames, count: number): Promise<void> {
  while (live.frames.length < count && live.state === "open") await live.changed();
}

Deno.test("relay: a subscriber reads frame 1 of a group before the publisher wrote frame 2", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const s = await subscriber();
    const partial = s.subscribe(PATH, TRACK, { partial: true });
    const whole = (await subscriber()).subscribe(PATH, TRACK);
    const it = partial[Symbol.asyncIterator]();
    const wholeIt = whole[Symbol.asyncIterator]();
    await warm(producer, it, 1);
    assert.equal((await next(wholeIt)).sequence, 1);

    const group = new LiveFrames(0n);
    group.push(frame("f1"));
    producer.writeGroup(2, group);
    const got = await next(it);
    assert.equal(got.sequence, 2);
    assert.ok(got.live, "handed over while still arriving");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1"]);
    // The publisher has written one frame only: frame 1 went through the relay on its own.
    assert.equal(group.frames.length, 1);

    group.push(frame("f2"));
    await framesIn(got.live, 2);
    assert.equal(dec.decode(got.frames[1]), "f2");
    group.push(frame("f3"));
    group.finish();
    while (got.live.state === "open") await got.live.changed();
    assert.equal(got.live.state, "done");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2", "f3"]);
    // A subscriber that wants whole groups gets it once complete.
    const w = await next(wholeIt);
    assert.equal(w.sequence, 2);
    assert.equal(w.live, undefined);
    assert.deepEqual(w.frames.map((f) => dec.decode(f)), ["f1", "f2", "f3"]);
  }));

Deno.test("relay: @moq/net reads frame 1 of a group before the publisher wrote frame 2", () =>
  withPublisher(async ({ relay, producer }) => {
    const net = await dialNet(relay.port, { version: "moq-lite-05" });
    try {
      const sub = net.consume(Net.Path.from(PATH)).track(TRACK).subscribe({ priority: 0 });
      // Groups keep coming until @moq/net has one: its subscription starts at the latest.
      let sequence = 0;
      const warmed = (async () => {
        for (;;) {
          const g = await sub.recvGroup();
          assert.ok(g);
          await g.readFrame();
          return g.sequence;
        }
      })();
      let done = false;
      warmed.then(() => (done = true));
      while (!done) {
        producer.writeGroup(++sequence, frame("warm"));
        await new Promise((r) => setTimeout(r, 20));
      }
      const group = new LiveFrames(0n);
      group.push(frame("f1"));
      producer.writeGroup(++sequence, group);
      let g = await sub.recvGroup();
      while (g && g.sequence < sequence) g = await sub.recvGroup();
      assert.equal(g?.sequence, sequence);
      assert.equal(dec.decode((await g!.readFrame())?.payload), "f1");
      assert.equal(group.frames.length, 1, "frame 2 not written yet");
      group.push(frame("f2"));
      assert.equal(dec.decode((await g!.readFrame())?.payload), "f2");
      group.finish();
      assert.equal(await g!.readFrame(), undefined);
    } finally {
      net.close();
    }
  }));

Deno.test("relay: a subscriber joining mid-group gets the group from its first frame, then the rest live", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const first = (await subscriber()).subscribe(PATH, TRACK, { partial: true });
    const firstIt = first[Symbol.asyncIterator]();
    await warm(producer, firstIt, 1);
    const group = new LiveFrames(0n);
    group.push(frame("f1"));
    producer.writeGroup(2, group);
    group.push(frame("f2"));
    const seen = await next(firstIt);
    await framesIn(seen.live!, 2);

    // Joins now: the latest group is group 2, two frames in.
    const late = (await subscriber()).subscribe(PATH, TRACK, { partial: true });
    const got = await next(late[Symbol.asyncIterator]());
    assert.equal(got.sequence, 2);
    assert.ok(got.live);
    await framesIn(got.live, 2);
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2"]);
    group.push(frame("f3"));
    await framesIn(got.live, 3);
    group.finish();
    while (got.live.state === "open") await got.live.changed();
    assert.equal(got.live.state, "done");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2", "f3"]);
  }));

Deno.test("relay: FETCH of a group being written answers what exists and continues", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const s = await subscriber();
    const sub = s.subscribe(PATH, TRACK, { partial: true });
    const it = sub[Symbol.asyncIterator]();
    await warm(producer, it, 1);
    const group = new LiveFrames(0n);
    group.push(frame("f1"));
    producer.writeGroup(2, group);
    const seen = await next(it);
    assert.equal(seen.sequence, 2);
    // The relay holds group 2, one frame in: FETCH it while the publisher still writes.
    const fetching = s.fetch(PATH, TRACK, 2);
    let fetched = false;
    fetching.then(() => (fetched = true), () => (fetched = true));
    group.push(frame("f2"));
    await framesIn(seen.live!, 2);
    assert.equal(fetched, false, "the FETCH answer goes on while the group does");
    group.finish();
    const got = await fetching;
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2"]);
  }));

Deno.test("relay: egress_bytes_total counts every payload byte a subscriber read, frames after the hand-over and FETCH answers too", () =>
  withPublisher(async ({ relay, producer, subscriber }) => {
    const s = await subscriber();
    const it = s.subscribe(PATH, TRACK, { partial: true })[Symbol.asyncIterator]();
    await warm(producer, it, 1);
    const group = new LiveFrames(0n);
    group.push(new Uint8Array(1000));
    producer.writeGroup(2, group);
    const got = await next(it);
    assert.ok(got.live, "handed over at its first frame");
    // Four more frames, each forwarded after the group went to the subscriber's stream.
    for (let i = 2; i <= 5; i++) {
      group.push(new Uint8Array(1000 * i));
      await framesIn(got.live, i);
    }
    group.finish();
    while (got.live.state === "open") await got.live.changed();
    const payload = (frames: Uint8Array[]) => frames.reduce((n, f) => n + f.length, 0);
    const fetched = await s.fetch(PATH, TRACK, 2);
    const read = "warm".length + payload(got.frames) + payload(fetched.frames);
    assert.equal(read, 4 + 2 * 15_000);
    const egress = async () => {
      const f = families(await (await relay.get("/metrics")).text());
      return sampleValue(f, "sluice_relay_egress_bytes_total", { track: `/${PATH}/${TRACK}` });
    };
    // The relay counts a write once the transport took it, which may come just after the
    // subscriber read it: a few more looks (up to 10 s, far more than it takes).
    let counted = await egress();
    await until(async () => (counted = await egress()) === read, "egress to count every byte")
      .catch(() => {});
    assert.equal(counted, read, `egress_bytes_total ${counted}, the subscriber read ${read} B`);
  }));

// Group `sequence` being written upstream, one frame in, and a newer group after it: a
// subscription the relay opens now starts at the newer one, so the relay never holds
// `sequence` and a FETCH of it must go upstream.
function writtenUpstreamOnly(producer: TrackProducer, sequence: number): LiveFrames {
  const group = new LiveFrames(0n);
  group.push(frame("f1"));
  producer.writeGroup(sequence, group);
  producer.writeGroup(sequence + 1, frame("newer"));
  return group;
}

Deno.test("relay: a FETCH it forwards upstream reads frame 1 before the publisher wrote frame 2", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const group = writtenUpstreamOnly(producer, 5);
    const s = await subscriber();
    const got = await within(s.fetch(PATH, TRACK, 5, { partial: true }), 30_000, "frame 1");
    assert.ok(got.live, "handed over while still being written");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1"]);
    assert.equal(group.frames.length, 1, "frame 2 not written yet");
    group.push(frame("f2"));
    await framesIn(got.live, 2);
    group.push(frame("f3"));
    group.finish();
    while (got.live.state === "open") await got.live.changed();
    assert.equal(got.live.state, "done");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2", "f3"]);
    // A FETCH of the whole group, now complete upstream, gets all of it.
    const whole = await s.fetch(PATH, TRACK, 5);
    assert.deepEqual(whole.frames.map((f) => dec.decode(f)), ["f1", "f2", "f3"]);
  }));

Deno.test("relay: @moq/net's FETCH of a group still written upstream streams through the relay", () =>
  withPublisher(async ({ relay, producer }) => {
    const group = writtenUpstreamOnly(producer, 5);
    const net = await dialNet(relay.port, { version: "moq-lite-05" });
    try {
      const broadcast = net.consume(Net.Path.from(PATH));
      const g = await within(broadcast.fetchGroup(TRACK, 5), 30_000, "the FETCH answer");
      const first = await within(g.readFrame(), 30_000, "frame 1");
      assert.equal(dec.decode(first?.payload), "f1");
      assert.equal(group.frames.length, 1, "frame 2 not written yet");
      group.push(frame("f2"));
      assert.equal(dec.decode((await g.readFrame())?.payload), "f2");
      group.finish();
      assert.equal(await g.readFrame(), undefined);
    } finally {
      net.close();
    }
  }));

Deno.test("relay: a group its publisher abandons mid-FETCH (over WebSocket) is reset downstream", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const group = writtenUpstreamOnly(producer, 5);
    const got = await within(
      (await subscriber()).fetch(PATH, TRACK, 5, { partial: true }),
      30_000,
      "frame 1",
    );
    assert.ok(got.live);
    group.push(frame("f2"));
    await framesIn(got.live, 2);
    group.reset();
    while (got.live.state === "open") await got.live.changed();
    assert.equal(got.live.state, "reset");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2"]);
  }, true));

Deno.test("relay: a group its publisher abandons (stream reset, over WebSocket) is reset downstream", () =>
  withPublisher(async ({ producer, subscriber }) => {
    const partial = (await subscriber()).subscribe(PATH, TRACK, { partial: true });
    const whole = (await subscriber()).subscribe(PATH, TRACK);
    const it = partial[Symbol.asyncIterator]();
    const wholeIt = whole[Symbol.asyncIterator]();
    await warm(producer, it, 1);
    assert.equal((await next(wholeIt)).sequence, 1);
    const group = new LiveFrames(0n);
    group.push(frame("f1"));
    producer.writeGroup(2, group);
    const got = await next(it);
    assert.equal(got.sequence, 2);
    group.reset();
    while (got.live!.state === "open") await got.live!.changed();
    assert.equal(got.live!.state, "reset");
    // The next group comes; the abandoned one never reaches a subscriber of whole groups.
    producer.writeGroup(3, frame("after"));
    assert.equal((await next(it)).sequence, 3);
    assert.equal((await next(wholeIt)).sequence, 3);
  }, true));
