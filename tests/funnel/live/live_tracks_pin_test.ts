// A track reopened for a subscriber is handed to the session before its cursor attaches: in
// between (a microtask on moq-lite, a SUBSCRIBE_OK write on IETF) a commit that opens another
// track must not close it, or the subscriber holds a dead producer and is never sent the
// records acknowledged after it. Past the bound, such a track stays pinned until its cursor
// attaches (or a grace period passes); when every slot is pinned, a new subscription to a
// closed track is refused rather than growing the open tracks.
import assert from "node:assert/strict";
import type { LedgerEntry } from "../../../src/ledger/mod.ts";
import type { TrackPath } from "../../../src/path/mod.ts";
import {
  LivePublisher,
  MAX_LIVE_TRACKS,
  SESSION_PIN_SHARE,
  SUBSCRIBER_PIN_MS,
} from "../../../src/funnel/live/mod.ts";
import { type MoqPeer, TrackProducer } from "../../../src/moq/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";

const entry = (seq: number): LedgerEntry => ({ epoch: 0, seq, wallclock: BigInt(seq + 1) });
const path = (broadcast: string): TrackPath => ({ broadcast: [broadcast], track: "t" });

/** A publisher over a "ledger" where every track exists with one record; counts its lookups. */
function publisherOver(
  maxTracks: number | undefined,
  clock?: ManualClock,
): LivePublisher & { lookups: number } {
  const counted = { lookups: 0 };
  const publisher = new LivePublisher({
    ...(maxTracks === undefined ? {} : { maxTracks }),
    ...(clock ? { now: clock.now } : {}),
    lookupTrack: () => (counted.lookups++, Promise.resolve({ newest: entry(0) })),
  });
  return Object.assign(publisher, counted);
}

/**
 * Reopens `x` for a subscriber, then, before its cursor attaches, commits to `others` new
 * tracks (what the commit feed may do in that window); then the cursor attaches and `x`
 * gets a record, which the subscriber must receive.
 */
async function reopenThenCommitElsewhere(publisher: LivePublisher, others: number): Promise<void> {
  const served = await publisher.serve({ kind: "subscribe", path: "x", track: "t" });
  assert.ok(served instanceof TrackProducer, `served ${served}`);
  for (let i = 0; i < others; i++) publisher.committed(path(`late${i}`), [entry(0)]);
  const cursor = served.cursor();
  publisher.committed(path("x"), [entry(1)]);
  assert.equal(served.closed, false, "the subscriber's producer was closed under it");
  assert.equal(publisher.producer("x", "t"), served, "the commit went to another producer");
  let got = await cursor.next();
  if (got?.sequence === 1) got = await cursor.next(); // the newest record at the subscription
  assert.equal(got?.sequence, 2, "the record committed after the subscription");
  cursor.close();
}

// The bound is lowered to 1 (shipped: MAX_LIVE_TRACKS, 4096) so that a single commit to another
// track is enough to evict; the twin below runs at the shipped default.
Deno.test("at bound 1, a track reopened for a subscriber survives a commit to another track before its cursor attaches", async () => {
  const publisher = publisherOver(1);
  try {
    publisher.committed(path("x"), [entry(0)]);
    publisher.committed(path("y"), [entry(0)]);
    assert.equal(publisher.producer("x", "t"), undefined, "x is closed");
    await reopenThenCommitElsewhere(publisher, 1);
    // The pin went with the cursor: at most the bound plus the subscribed track stay open.
    assert.ok(publisher.openTracks <= 2, `${publisher.openTracks} open`);
  } finally {
    publisher.close();
  }
});

Deno.test("at the shipped default, a track reopened for a subscriber survives MAX_LIVE_TRACKS commits to other tracks before its cursor attaches", async () => {
  const publisher = publisherOver(undefined);
  try {
    publisher.committed(path("x"), [entry(0)]);
    for (let i = 0; i < MAX_LIVE_TRACKS; i++) publisher.committed(path(`b${i}`), [entry(0)]);
    assert.equal(publisher.producer("x", "t"), undefined, "x is closed");
    await reopenThenCommitElsewhere(publisher, MAX_LIVE_TRACKS);
    assert.ok(publisher.openTracks <= MAX_LIVE_TRACKS + 1, `${publisher.openTracks} open`);
  } finally {
    publisher.close();
  }
});

/**
 * Opens `count` tracks c0, c1, ..., then `max` others so that every c is closed; reopens the
 * first `max` of them for subscribers whose cursors do not attach: every slot is pinned.
 */
async function pinEverySlot(publisher: LivePublisher, max: number): Promise<TrackProducer[]> {
  for (let i = 0; i <= max; i++) publisher.committed(path(`c${i}`), [entry(0)]);
  for (let i = 0; i < max; i++) publisher.committed(path(`o${i}`), [entry(0)]);
  const pinned: TrackProducer[] = [];
  for (let i = 0; i < max; i++) {
    const served = await publisher.serve({ kind: "subscribe", path: `c${i}`, track: "t" });
    assert.ok(served instanceof TrackProducer, `c${i}: ${served}`);
    pinned.push(served);
  }
  return pinned;
}

/** Every slot pinned: a subscription to another closed track is refused, and commits keep the bound. */
async function refusedWhilePinned(max: number): Promise<void> {
  const clock = new ManualClock();
  const publisher = publisherOver(max, clock);
  try {
    const pinned = await pinEverySlot(publisher, max);
    const lookups = publisher.lookups;
    const refused = await publisher.serve({ kind: "subscribe", path: `c${max}`, track: "t" });
    assert.equal(refused, "not_found");
    assert.equal(publisher.refusedReopens, 1);
    assert.equal(publisher.lookups, lookups, "refused before it cost a lookup");
    // Commits to new tracks still open them, closing one another, never a pinned track.
    for (let i = 0; i < 3; i++) publisher.committed(path(`new${i}`), [entry(0)]);
    assert.ok(publisher.openTracks <= max + 1, `${publisher.openTracks} open`);
    assert.ok(pinned.every((p) => !p.closed), "a pinned track was closed");
    // A FETCH (no cursor to wait for) still reopens a closed track without pinning it.
    assert.ok(
      await publisher.serve({ kind: "fetch", path: `c${max}`, track: "t" }) instanceof
        TrackProducer,
    );
    publisher.committed(path("new-after-fetch"), [entry(0)]);
    assert.equal(publisher.producer(`c${max}`, "t"), undefined, "the fetched one closes again");
    // One cursor attaching frees its slot.
    const cursor = pinned[0]!.cursor();
    assert.ok(
      await publisher.serve({ kind: "subscribe", path: `c${max}`, track: "t" }) instanceof
        TrackProducer,
      "served once a pinned subscriber attached",
    );
    cursor.close();
    // Pins whose cursors never attach lapse after SUBSCRIBER_PIN_MS.
    clock.advance(SUBSCRIBER_PIN_MS);
    for (let i = 0; i < max + 2; i++) publisher.committed(path(`later${i}`), [entry(0)]);
    assert.equal(publisher.openTracks, max, "lapsed pins hold nothing open");
    assert.ok(pinned.slice(1).every((p) => p.closed));
  } finally {
    publisher.close();
  }
}

// Bound lowered to 2 (shipped: MAX_LIVE_TRACKS) so that two subscriptions pin every slot; the
// twin below runs at the shipped default.
Deno.test("at bound 2, with every slot pinned by a subscription not yet attached, another subscription to a closed track is refused and the bound holds", async () => {
  await refusedWhilePinned(2);
});

Deno.test("at the shipped default, with MAX_LIVE_TRACKS slots pinned, another subscription to a closed track is refused and the bound holds", async () => {
  await refusedWhilePinned(MAX_LIVE_TRACKS);
});

/**
 * At bound `max`: one session's subscriptions to closed tracks, whose cursors never attach,
 * pin at most its share (max / SESSION_PIN_SHARE); past it that session is refused, while
 * another session's subscription to a closed track is served.
 */
async function oneSessionHoldsItsShare(max: number): Promise<void> {
  const publisher = publisherOver(max);
  const greedy = {};
  const honest = {};
  const share = Math.ceil(max / SESSION_PIN_SHARE);
  try {
    for (let i = 0; i <= max + share; i++) publisher.committed(path(`c${i}`), [entry(0)]);
    for (let i = 0; i < max; i++) publisher.committed(path(`o${i}`), [entry(0)]);
    for (let i = 0; i < share; i++) {
      const served = await publisher.serve({
        kind: "subscribe",
        path: `c${i}`,
        track: "t",
        session: greedy as MoqPeer,
      });
      assert.ok(served instanceof TrackProducer, `c${i}: ${served}`);
    }
    const refused = await publisher.serve({
      kind: "subscribe",
      path: `c${share}`,
      track: "t",
      session: greedy as MoqPeer,
    });
    assert.equal(refused, "not_found", "past its share");
    const served = await publisher.serve({
      kind: "subscribe",
      path: `c${share + 1}`,
      track: "t",
      session: honest as MoqPeer,
    });
    assert.ok(served instanceof TrackProducer, `another session: ${served}`);
  } finally {
    publisher.close();
  }
}

// Bound lowered to 4 (shipped: MAX_LIVE_TRACKS) so that one pin is a session's whole share; the
// twin below runs at the shipped default.
Deno.test("at bound 4, one session pins at most its share of closed tracks; another session's subscription is served", async () => {
  await oneSessionHoldsItsShare(4);
});

Deno.test("at the shipped default, one session pins at most MAX_LIVE_TRACKS / SESSION_PIN_SHARE closed tracks; another session's subscription is served", async () => {
  await oneSessionHoldsItsShare(MAX_LIVE_TRACKS);
});
