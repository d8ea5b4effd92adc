// A subscription to a track that is not open asks the ledger whether it exists: an anonymous
// client looping SUBSCRIBEs for a missing track must not turn each into a storage query. Lookups
// of one track in flight are shared, "no such track" is remembered (bounded in number and time)
// until the track is created, and the lookups in flight are bounded. Storage queries are
// charged to the asking session's budget (and all listener sessions' together, or the relay
// session's own); answers from memory are not.
import assert from "node:assert/strict";
import {
  LISTENER_LOOKUP_LIMIT,
  MAX_MISSING_TRACKS,
  MAX_PENDING_LOOKUPS,
  MISSING_TRACK_MS,
  RecordFetcher,
  RELAY_ASKER,
  RELAY_LOOKUP_LIMIT,
  SESSION_LOOKUP_LIMIT,
  TrackLookups,
  type TrackLookupsOptions,
} from "../../../src/funnel/live/mod.ts";
import { Ledger, MemoryBackend, type TrackPath } from "../../../src/ledger/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { until } from "../../support/wait.ts";

const path = (name: string): TrackPath => ({ broadcast: ["b"], track: name });

/** Lookups over a "ledger" holding `exists`, every ask counted, its answer held until `release()`. */
function lookupsOver(exists: Set<string>, options: TrackLookupsOptions = {}) {
  const asked: string[] = [];
  let held: (() => void)[] = [];
  const lookups = new TrackLookups(async (p) => {
    asked.push(p.track);
    const answer = exists.has(p.track) ? { newest: undefined } : undefined; // read, then sent
    await new Promise<void>((resolve) => held.push(resolve));
    return answer;
  }, options);
  const release = () => {
    const now = held;
    held = [];
    for (const r of now) r();
  };
  return { lookups, asked, release };
}

Deno.test("concurrent lookups of a missing track share one; later ones are answered from memory until MISSING_TRACK_MS pass", async () => {
  const clock = new ManualClock();
  const { lookups, asked, release } = lookupsOver(new Set(), { now: clock.now });
  const all = Array.from({ length: 100 }, () => lookups.lookup(path("nope")));
  release();
  assert.deepEqual(await Promise.all(all), all.map(() => undefined));
  assert.deepEqual(asked, ["nope"]);
  for (let i = 0; i < 100; i++) assert.equal(await lookups.lookup(path("nope")), undefined);
  assert.deepEqual(asked, ["nope"], "remembered");
  clock.advance(MISSING_TRACK_MS);
  const again = lookups.lookup(path("nope"));
  release();
  assert.equal(await again, undefined);
  assert.deepEqual(asked, ["nope", "nope"], "asked again once it lapsed");
});

Deno.test("a track created is looked up afresh at once, even when its creation came while a lookup was in flight", async () => {
  const exists = new Set<string>();
  const { lookups, asked, release } = lookupsOver(exists);
  const first = lookups.lookup(path("t"));
  release();
  assert.equal(await first, undefined);
  exists.add("t");
  lookups.created(path("t"));
  const found = lookups.lookup(path("t"));
  release();
  assert.deepEqual(await found, { newest: undefined });
  // Created while a lookup that will say "missing" is in flight: that answer is not remembered.
  const racing = lookups.lookup(path("u"));
  exists.add("u");
  lookups.created(path("u"));
  release();
  assert.equal(await racing, undefined, "the answer read before the creation");
  const after = lookups.lookup(path("u"));
  release();
  assert.deepEqual(await after, { newest: undefined });
  assert.deepEqual(asked, ["t", "t", "u", "u"]);
});

Deno.test("a track the ledger holds open is never answered from memory", async () => {
  const open = new Set<string>();
  const { lookups, asked, release } = lookupsOver(open, { known: (p) => open.has(p.track) });
  const first = lookups.lookup(path("t"));
  release();
  assert.equal(await first, undefined);
  open.add("t"); // created, and the feed has not told yet
  const found = lookups.lookup(path("t"));
  release();
  assert.deepEqual(await found, { newest: undefined });
  assert.deepEqual(asked, ["t", "t"]);
});

/** Remembers `bound` + 1 missing tracks: the first is forgotten, `bound` stay. */
async function missingBounded(bound: number, options: TrackLookupsOptions): Promise<void> {
  const { lookups, asked, release } = lookupsOver(new Set(), options);
  for (let i = 0; i <= bound; i++) {
    const done = lookups.lookup(path(`m${i}`));
    release();
    await done;
  }
  assert.equal(lookups.missing, bound);
  assert.equal(asked.length, bound + 1);
  const last = lookups.lookup(path(`m${bound}`));
  assert.equal(await last, undefined);
  assert.equal(asked.length, bound + 1, "the newest is remembered");
  const first = lookups.lookup(path("m0"));
  release();
  await first;
  assert.equal(asked.length, bound + 2, "the oldest was forgotten");
}

// Bound lowered to 3 (shipped: MAX_MISSING_TRACKS) to see the eviction order in a few lookups;
// the twin below runs at the shipped default.
Deno.test("at most 3 missing tracks are remembered when the bound is 3, the one remembered first forgotten", async () => {
  await missingBounded(3, { maxMissing: 3 });
});

Deno.test("at the shipped default, at most MAX_MISSING_TRACKS missing tracks are remembered", async () => {
  await missingBounded(MAX_MISSING_TRACKS, {});
});

/** `bound` lookups of distinct tracks in flight: one more is answered not found without asking. */
async function pendingBounded(bound: number, options: TrackLookupsOptions): Promise<void> {
  const { lookups, asked, release } = lookupsOver(new Set(["p0"]), options);
  const inFlight = Array.from({ length: bound }, (_, i) => lookups.lookup(path(`p${i}`)));
  assert.equal(lookups.pending, bound);
  assert.equal(await lookups.lookup(path("one-more")), undefined);
  assert.equal(lookups.refused, 1);
  assert.equal(asked.length, bound);
  // A lookup of a track already in flight still shares it.
  const shared = lookups.lookup(path("p0"));
  release();
  await Promise.all(inFlight);
  assert.deepEqual(await shared, { newest: undefined });
  assert.equal(lookups.pending, 0);
}

// Bound lowered to 2 (shipped: MAX_PENDING_LOOKUPS) so that two held lookups fill it; the twin
// below runs at the shipped default.
Deno.test("with 2 lookups in flight and the bound 2, a lookup of a third track is answered not found without asking", async () => {
  await pendingBounded(2, { maxPending: 2 });
});

Deno.test("at the shipped default, with MAX_PENDING_LOOKUPS lookups in flight, one more is answered not found without asking", async () => {
  await pendingBounded(MAX_PENDING_LOOKUPS, {});
});

Deno.test("the funnel's lookups forget a missing track when the commit feed tells of it, as one learned from another funnel", async () => {
  const backend = new MemoryBackend();
  const ledger = new Ledger(backend);
  // Another funnel on the same storage: this ledger hears of its tracks only through its feed.
  const other = new Ledger(backend);
  const records = new RecordFetcher(ledger);
  try {
    const t = path("t");
    assert.equal(await records.lookup(t), undefined);
    await other.create(t);
    assert.equal(await records.lookup(t), undefined, "not heard of yet: still missing");
    assert.equal(records.lookups.asked, 1);
    // What the ledger's follower does for a track another process created (Ledger.#learnTrack).
    ledger.commits.trackCreated(t, undefined);
    await until(() => records.lookups.missing === 0, "the feed telling the fetcher");
    assert.deepEqual(await records.lookup(t), { newest: undefined });
    // A track created here is found at once, before the feed has told anyone (as a POST's
    // first entry opens the track before the feed hears of it with that entry).
    const u = path("u");
    assert.equal(await records.lookup(u), undefined);
    await ledger.track(u, true);
    assert.deepEqual(await records.lookup(u), { newest: undefined });
  } finally {
    await ledger.close();
    await other.close();
  }
});

/** `count` lookups of fresh tracks by `asker`, answered; how many were "too_many". */
async function fresh(
  { lookups, release }: ReturnType<typeof lookupsOver>,
  asker: string,
  count: number,
  prefix = asker,
): Promise<number> {
  let tooMany = 0;
  for (let i = 0; i < count; i += MAX_PENDING_LOOKUPS) {
    const batch = Array.from(
      { length: Math.min(MAX_PENDING_LOOKUPS, count - i) },
      (_, j) => lookups.lookup(path(`${prefix} ${i + j}`), asker),
    );
    release();
    for (const answer of await Promise.all(batch)) if (answer === "too_many") tooMany++;
  }
  return tooMany;
}

Deno.test("at the shipped default, a session's storage lookups are SESSION_LOOKUP_LIMIT's burst, then its rate; answers from memory and shared lookups cost none", async () => {
  const clock = new ManualClock();
  const over = lookupsOver(new Set(), { now: clock.now });
  const { lookups, asked, release } = over;
  const { rate, burst } = SESSION_LOOKUP_LIMIT;
  assert.equal(await fresh(over, "s1", burst + 100), 100);
  assert.equal(asked.length, burst);
  assert.equal(lookups.limited.session, 100);
  // Remembered missing, or already being looked up: answered without a token.
  assert.equal(await lookups.lookup(path("s1 0"), "s1"), undefined);
  const shared = [lookups.lookup(path("shared"), "s2"), lookups.lookup(path("shared"), "s1")];
  release();
  assert.deepEqual(await Promise.all(shared), [undefined, undefined]);
  // Another session has its own budget; this one gets `rate` a second back.
  assert.equal(await fresh(over, "s2", 1, "s2 more"), 0);
  clock.advance(1000);
  assert.equal(await fresh(over, "s1", rate + 1, "s1 later"), 1);
  assert.equal(asked.length, burst + 1 + 1 + rate);
  // A lookup no session asks (the embedder's own) is not charged: s1's budget is spent.
  const own = lookups.lookup(path("own"));
  release();
  assert.equal(await own, undefined);
  assert.equal(asked.at(-1), "own");
});

Deno.test("at the shipped default, listener sessions together make LISTENER_LOOKUP_LIMIT's burst of storage lookups; the relay session has RELAY_LOOKUP_LIMIT's own", async () => {
  const clock = new ManualClock();
  const over = lookupsOver(new Set(), { now: clock.now });
  const { lookups, asked } = over;
  const perSession = SESSION_LOOKUP_LIMIT.burst;
  const sessions = LISTENER_LOOKUP_LIMIT.burst / perSession;
  for (let s = 0; s < sessions; s++) assert.equal(await fresh(over, `${s}`, perSession), 0);
  assert.equal(await fresh(over, `${sessions}`, 10), 10, "a fresh session: the total is spent");
  assert.equal(lookups.limited.listener, 10);
  assert.equal(asked.length, LISTENER_LOOKUP_LIMIT.burst);
  assert.equal(await fresh(over, RELAY_ASKER, RELAY_LOOKUP_LIMIT.burst + 1), 1);
  assert.equal(lookups.limited.relay, 1);
  assert.equal(asked.length, LISTENER_LOOKUP_LIMIT.burst + RELAY_LOOKUP_LIMIT.burst);
});
