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
} from "../../../src/moq/mod.ts";
import { RELAY_DEFAULTS } from "../../../src/config/mod.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { until, within } from "../../support/wait.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../../support/test_relay.ts";

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
  /** Payload bytes the relay received for the track (from /metrics). */
  ingress(): Promise<number>;
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
      moq: { serve: (r) => (r.path === PATH && r.track === TRACK ? producer : "not_found") },
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
      ingress: async () => {
        const f = families(await (await relay.get("/metrics")).text());
        return sampleValue(f, "sluice_relay_ingress_bytes_total", LABEL) ?? 0;
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

// Groups of 6 MiB, each on its own QUIC stream: the relay takes them in whatever order they
// finish arriving, so the later ones of a burst often land before earlier ones.
const BIG = 6 * 1024 * 1024;
// A generous bound on each wait, so that a group that never comes fails the test instead of
// holding the suite (this is not a speed target: alone, the whole test takes well under 1 s).
const GUARD_MS = 60_000;

// Waits (bounded) until group `last` arrives; the budget may have skipped the subscriber past others.
async function upTo(it: AsyncIterator<ReceivedGroup>, last: number): Promise<void> {
  await within(
    (async () => {
      while ((await next(it)).sequence !== last);
    })(),
    GUARD_MS,
    `group ${last}`,
  );
}

// The ring holds what the budget allows, the newest group among it, and a joiner gets that whole.
async function assertBounded(f: Fixture, newest: number): Promise<void> {
  const held = await f.ring();
  assert.ok(held.bytes <= RELAY_DEFAULTS.RELAY_CACHE_BYTES, `ring holds ${held.bytes} B`);
  assert.equal(held.groups, Math.floor(RELAY_DEFAULTS.RELAY_CACHE_BYTES / BIG));
  const joiner = (await f.subscriber()).subscribe(PATH, TRACK);
  const got = await within(next(joiner[Symbol.asyncIterator]()), GUARD_MS, "the joiner's group");
  assert.equal(got.sequence, newest);
  assert.equal(got.frames[0]!.length, BIG);
}

Deno.test("relay cache: RELAY_CACHE_BYTES bounds what a publisher of large groups makes a track hold", () =>
  withPublisher(async (f) => {
    const it = (await f.subscriber()).subscribe(PATH, TRACK)[Symbol.asyncIterator]();
    f.producer.writeGroup(1, enc.encode("warm"));
    assert.equal((await next(it)).sequence, 1);
    // Eight of them: the count (8) would keep all 48 MiB.
    for (let seq = 2; seq <= 9; seq++) f.producer.writeGroup(seq, new Uint8Array(BIG).fill(seq));
    await upTo(it, 9);
    await assertBounded(f, 9);
  }));

Deno.test("relay cache: groups arriving late do not push the newest out of RELAY_CACHE_BYTES", () =>
  withPublisher(async (f) => {
    const it = (await f.subscriber()).subscribe(PATH, TRACK)[Symbol.asyncIterator]();
    f.producer.writeGroup(1, enc.encode("warm"));
    assert.equal((await next(it)).sequence, 1);
    // The newest first (the subscriber has it, so the relay took it), then seven older ones
    // (retransmitted, or repaired): the budget keeps the newest sequences, whatever the order.
    f.producer.writeGroup(9, new Uint8Array(BIG).fill(9));
    await upTo(it, 9);
    for (let seq = 2; seq <= 8; seq++) f.producer.writeGroup(seq, new Uint8Array(BIG).fill(seq));
    const all = 4 + 8 * BIG;
    await until(async () => (await f.ingress()) === all, "every group at the relay");
    await assertBounded(f, 9);
  }));
