// What a track's ring keeps besides its group count, with real sessions through
// the relay: the GOP being written stays for joiners whatever arrives after it,
// groups past RELAY_CACHE_MS go, and RELAY_CACHE_BYTES bounds what one
// publisher can make a track hold.
import assert from "node:assert/strict";
import {
  LiveFrames,
  type MoqSession,
  type ReceivedGroup,
  TrackProducer,
} from "../../src/moq/mod.ts";
import { RELAY_DEFAULTS } from "../../src/config/mod.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../support/test_relay.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PATH = "live/cam";
const TRACK = "video";
const LABEL = { track: `/${PATH}/${TRACK}` };

interface Fixture {
  relay: TestRelay;
  producer: TrackProducer;
  /** Dials a subscriber of ours that has seen the broadcast. */
  subscriber(): Promise<MoqSession>;
  /** The relay's ring of the track: groups and payload bytes held (from /metrics). */
  ring(): Promise<{ groups: number; bytes: number }>;
}

// The relay at its defaults, but on a clock the test moves (it never fires the
// relay's timers by itself: time passes only where a test says so).
async function withPublisher(run: (f: Fixture, clock: ManualClock) => Promise<void>) {
  using _q = quiet();
  const clock = new ManualClock(Date.now());
  const relay = await startTestRelay({ extra: { now: clock.now } });
  const producer = new TrackProducer();
  const sessions: MoqSession[] = [];
  try {
    const pub = await dialOurs(relay.port, {
      moq: { serve: (r) => (r.path === PATH && r.track === TRACK ? producer : "not-found") },
    });
    sessions.push(pub);
    pub.announce(PATH);
    await run({
      relay,
      producer,
      subscriber: async () => {
        const s = await dialOurs(relay.port);
        sessions.push(s);
        await seeAnnounced(s, PATH);
        return s;
      },
      ring: async () => {
        const f = families(await (await relay.get("/metrics")).text());
        return {
          groups: sampleValue(f, "sluice_relay_buffer_depth_groups", LABEL) ?? 0,
          bytes: sampleValue(f, "sluice_relay_buffer_bytes", LABEL) ?? 0,
        };
      },
    }, clock);
  } finally {
    for (const s of sessions) s.close();
    await relay.stop();
  }
}

async function next(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await it.next();
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}

// Reads until every group of `sequences` arrived (in any order).
async function seen(it: AsyncIterator<ReceivedGroup>, sequences: Set<number>): Promise<void> {
  while (sequences.size > 0) sequences.delete((await next(it)).sequence);
}

async function framesIn(live: LiveFrames, count: number): Promise<void> {
  while (live.frames.length < count && live.state === "open") await live.changed();
}

Deno.test("relay cache: a joiner gets the GOP being written from its first frame, though more groups than the count arrived after it", () =>
  withPublisher(async ({ producer, subscriber }, clock) => {
    const first = (await subscriber()).subscribe(PATH, TRACK, { partial: true });
    const it = first[Symbol.asyncIterator]();
    producer.writeGroup(1, enc.encode("warm"));
    assert.equal((await next(it)).sequence, 1);

    const gop = new LiveFrames(0n);
    gop.push(enc.encode("f1"));
    producer.writeGroup(10, gop);
    assert.equal((await next(it)).sequence, 10);
    // Past the 50 ms burst window, so the count applies to group 10 as to any other.
    clock.advance(100);
    // Eight late groups (a backfill, or repairs) arrive after it: GROUP_CACHE_SIZE (8)
    // more arrivals than the ring keeps by count.
    for (let seq = 2; seq <= 9; seq++) producer.writeGroup(seq, enc.encode(`late ${seq}`));
    await seen(it, new Set([2, 3, 4, 5, 6, 7, 8, 9]));

    const late = (await subscriber()).subscribe(PATH, TRACK, { partial: true });
    const got = await next(late[Symbol.asyncIterator]());
    assert.equal(got.sequence, 10);
    assert.ok(got.live, "the GOP is still being written");
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1"]);
    gop.push(enc.encode("f2"));
    await framesIn(got.live, 2);
    gop.finish();
    while (got.live.state === "open") await got.live.changed();
    assert.deepEqual(got.frames.map((f) => dec.decode(f)), ["f1", "f2"]);
  }));

Deno.test("relay cache: groups older than RELAY_CACHE_MS go, the newest complete one stays", () =>
  withPublisher(async ({ producer, subscriber, ring }, clock) => {
    const sub = (await subscriber()).subscribe(PATH, TRACK);
    const it = sub[Symbol.asyncIterator]();
    producer.writeGroup(1, enc.encode("g1"));
    assert.equal((await next(it)).sequence, 1);
    for (let seq = 2; seq <= 4; seq++) producer.writeGroup(seq, enc.encode(`g${seq}`));
    await seen(it, new Set([2, 3, 4]));
    assert.equal((await ring()).groups, 4, "within the count and the age limit: all kept");

    clock.advance(RELAY_DEFAULTS.RELAY_CACHE_MS + 1);
    producer.writeGroup(5, enc.encode("g5"));
    await seen(it, new Set([5]));
    assert.equal((await ring()).groups, 1, "only group 5 is younger than the limit");

    // Nothing new comes: the newest complete group stays however old it gets.
    clock.advance(RELAY_DEFAULTS.RELAY_CACHE_MS * 3);
    const joiner = (await subscriber()).subscribe(PATH, TRACK);
    assert.equal((await next(joiner[Symbol.asyncIterator]())).sequence, 5);
  }));

// Ignored for now: in a clean-checkout CI run on the 2-core machine this test waited more than
// 4 minutes for group 9 of eight 6 MiB groups (it passes when run alone). The byte budget itself
// is covered by tests/moq/group_ring_test.ts; a bounded version of this one is open work.
Deno.test({
  name: "relay cache: RELAY_CACHE_BYTES bounds what a publisher of large groups makes a track hold",
  ignore: true,
}, () =>
  withPublisher(async ({ producer, subscriber, ring }) => {
    const sub = (await subscriber()).subscribe(PATH, TRACK);
    const it = sub[Symbol.asyncIterator]();
    producer.writeGroup(1, enc.encode("warm"));
    assert.equal((await next(it)).sequence, 1);
    // 6 MiB groups, eight of them: the count (8) would keep all 48 MiB.
    const size = 6 * 1024 * 1024;
    for (let seq = 2; seq <= 9; seq++) producer.writeGroup(seq, new Uint8Array(size).fill(seq));
    // The subscriber may be skipped past groups the budget dropped: wait for the last.
    while ((await next(it)).sequence !== 9);
    const held = await ring();
    assert.ok(held.bytes <= RELAY_DEFAULTS.RELAY_CACHE_BYTES, `ring holds ${held.bytes} B`);
    assert.equal(held.groups, Math.floor(RELAY_DEFAULTS.RELAY_CACHE_BYTES / size));
    // A joiner still gets the newest group whole.
    const joiner = (await subscriber()).subscribe(PATH, TRACK);
    const got = await next(joiner[Symbol.asyncIterator]());
    assert.equal(got.sequence, 9);
    assert.equal(got.frames[0]!.length, size);
  }));
