// TrackProducer and its cursors against a reference model in plain arrays:
// random arrival orders, duplicates, late groups, slow cursors, evictions,
// burstMs 0 and 50 on a clock the test moves, turns ending between writes or
// not (a burst's window starts when the turn's wake hands it over). The model predicts every poll
// and every skip count; on top of that the run checks the invariants the
// model is meant to state (each sequence at most once, nothing below a skip
// point after it, delivered + skipped accounts for every group owed).
import assert from "node:assert/strict";
import { type CachedGroup, MAX_BURST_GROUPS, TrackProducer } from "../../../src/moq/mod.ts";
import { RELAY_DEFAULTS } from "../../../src/config/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { checkAsync, fc } from "../../support/property.ts";

const PRODUCER_DEFAULT_CACHE = 32;
const CURSOR_DEFAULT_LIMIT = 16;

type Op =
  | { readonly op: "write"; readonly seq: number }
  | { readonly op: "advance"; readonly ms: number }
  | { readonly op: "turn" }
  | { readonly op: "open"; readonly start: number | undefined; readonly limit: number | undefined }
  | { readonly op: "poll"; readonly cursor: number; readonly times: number }
  | { readonly op: "close"; readonly cursor: number }
  | { readonly op: "fetch"; readonly seq: number };

interface Arrival {
  readonly seq: number;
  readonly at: number;
  /** When the wake after its turn handed it to the cursors (undefined: not yet). */
  handedAt?: number;
  /** Dropped for the byte budget from among later arrivals (its place stays). */
  dropped?: boolean;
}

/** One cursor as the spec describes it, over the model's full arrival list. */
class ModelCursor {
  readonly floor: number;
  readonly limit: number;
  /** Lowest sequence it may deliver: its start, raised to each skip point. */
  min: number;
  backlog: number[];
  index: number;
  skipped = 0;
  readonly delivered: number[] = [];
  /** Sequences it must account for: the backlog it started with, then later writes at or above its start. */
  readonly owed = new Set<number>();
  skipPoint = -1;

  constructor(model: Model, start: number | undefined, limit: number) {
    const latest = model.latest;
    this.floor = start ?? latest ?? 0;
    this.limit = limit;
    this.min = this.floor;
    this.backlog = model.held().map((a) => a.seq).filter((s) => s >= this.floor).sort((a, b) =>
      a - b
    );
    for (const s of this.backlog) this.owed.add(s);
    this.index = model.arrivals.length;
    if (this.backlog.length > limit) {
      this.skipped += this.backlog.length - 1;
      this.backlog = this.backlog.slice(-1);
      this.min = this.backlog[0]!;
      this.skipPoint = this.min;
    }
  }

  poll(model: Model): number | undefined {
    const got = this.#next(model);
    if (got !== undefined) this.delivered.push(got);
    return got;
  }

  #next(model: Model): number | undefined {
    if (this.backlog.length > 0) return this.backlog.shift();
    const all = model.arrivals;
    for (;;) {
      if (this.index >= all.length) return undefined;
      // A place the byte budget dropped before this cursor read it counts as falling behind.
      const behind = this.index < model.oldest || all[this.index]!.dropped === true ||
        (all.length - this.index > this.limit && !model.young(all[this.index]!));
      if (behind) {
        // Every unread arrival at or above the start is passed over but the newest
        // sequence still in the ring at or above the skip point, which comes next.
        const unread = all.slice(this.index).filter((a) => a.seq >= this.floor);
        const candidates = all.slice(Math.max(this.index, model.oldest))
          .filter((a) => !a.dropped && a.seq >= this.min).map((a) => a.seq);
        const target = candidates.length > 0 ? Math.max(...candidates) : undefined;
        this.skipped += unread.length - (target === undefined ? 0 : 1);
        this.index = all.length;
        if (target !== undefined) this.min = this.skipPoint = target;
        return target;
      }
      const a = all[this.index++]!;
      if (a.seq >= this.min) return a.seq;
      if (a.seq >= this.floor) this.skipped++;
    }
  }
}

class Model {
  readonly arrivals: Arrival[] = [];
  readonly seen = new Set<number>();
  oldest = 0;
  stale = 0;
  constructor(
    readonly cache: number,
    readonly burstMs: number,
    readonly now: () => number,
    /** Groups of one byte each the byte budget allows (undefined: no budget). */
    readonly bytes: number | undefined,
  ) {}

  get latest(): number | undefined {
    return this.seen.size === 0 ? undefined : Math.max(...this.seen);
  }

  ring(): Arrival[] {
    return this.arrivals.slice(this.oldest);
  }

  /** The groups held: the ring less the places the byte budget dropped. */
  held(): Arrival[] {
    return this.ring().filter((a) => !a.dropped);
  }

  young(a: Arrival): boolean {
    if (this.burstMs === 0) return false;
    return a.handedAt === undefined || this.now() - a.handedAt < this.burstMs;
  }

  /** The turn ended: its wake handed every arrival so far to the cursors. */
  handOver(): void {
    for (const a of this.arrivals) a.handedAt ??= this.now();
  }

  write(seq: number, cursors: readonly ModelCursor[]): boolean {
    if (this.seen.has(seq)) {
      this.stale++;
      return false;
    }
    this.seen.add(seq);
    this.arrivals.push({ seq, at: this.now() });
    for (const c of cursors) if (seq >= c.floor) c.owed.add(seq);
    // The byte budget first, lowest sequence first (the earliest arrival of equals).
    while (this.bytes !== undefined && this.held().length > Math.max(1, this.bytes)) {
      const lowest = this.held().reduce((a, b) => (b.seq < a.seq ? b : a));
      lowest.dropped = true;
      this.#passDropped();
    }
    for (;;) {
      const slots = this.arrivals.length - this.oldest;
      const held = this.held().length;
      const oldest = this.arrivals[this.oldest]!;
      if (held <= 1) break;
      if (slots > this.cache + MAX_BURST_GROUPS) {
        this.#drop();
        continue;
      }
      if (held <= this.cache || this.young(oldest)) break;
      // The newest group by sequence stays, however many late ones arrived after it.
      if (this.held().every((a) => a.seq <= oldest.seq)) break;
      this.#drop();
    }
    return true;
  }

  // Drops the oldest arrival, and the dropped places behind it.
  #drop(): void {
    this.oldest++;
    this.#passDropped();
  }

  #passDropped(): void {
    while (this.oldest < this.arrivals.length && this.arrivals[this.oldest]!.dropped) this.oldest++;
  }
}

// Queue limits: the shipped ones (undefined is the cursor's default 16; the relay
// passes GROUP_CACHE_SIZE) come up in every run beside small ones, which make a
// cursor fall behind within a short run, and 64, which a run never exceeds.
const limitArb = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(1, 2, 3, 4, RELAY_DEFAULTS.GROUP_CACHE_SIZE, CURSOR_DEFAULT_LIMIT, 64),
);
// Sequences are drawn relative to the highest written so far, so a run
// mostly moves forward (with gaps) and now and then writes a late group or a
// duplicate; starts and fetches land around the live edge.
type RawOp =
  | { readonly op: "write"; readonly delta: number }
  | { readonly op: "open"; readonly delta: number | undefined; readonly limit: number | undefined }
  | { readonly op: "fetch"; readonly delta: number }
  | Exclude<Op, { op: "write" | "open" | "fetch" }>;
const rawOpArb: fc.Arbitrary<RawOp> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant("write"),
      delta: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) },
        { weight: 1, arbitrary: fc.integer({ min: -12, max: 0 }) },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("advance"), ms: fc.constantFrom(0, 10, 49, 50, 200) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("turn") }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("open"),
      delta: fc.option(fc.integer({ min: -12, max: 4 }), { nil: undefined }),
      limit: limitArb,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("poll"),
      cursor: fc.nat({ max: 7 }),
      times: fc.constantFrom(1, 1, 2, 5, 100),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("close"), cursor: fc.nat({ max: 7 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("fetch"), delta: fc.integer({ min: -40, max: 2 }) }),
  },
);

function absolute(raw: readonly RawOp[]): Op[] {
  let highest = -1;
  const at = (delta: number) => Math.max(0, highest + delta);
  return raw.map((o): Op => {
    switch (o.op) {
      case "write": {
        const seq = at(o.delta);
        highest = Math.max(highest, seq);
        return { op: "write", seq };
      }
      case "open":
        return {
          op: "open",
          start: o.delta === undefined ? undefined : at(o.delta),
          limit: o.limit,
        };
      case "fetch":
        return { op: "fetch", seq: at(o.delta) };
      default:
        return o;
    }
  });
}

// A few subscribers from the start, then anything.
const opsArb = fc.tuple(
  fc.array(
    fc.record({
      op: fc.constant("open" as const),
      delta: fc.option(fc.integer({ min: -2, max: 4 }), { nil: undefined }),
      limit: limitArb,
    }),
    { minLength: 1, maxLength: 4 },
  ),
  fc.array(rawOpArb, { minLength: 20, maxLength: 200 }),
).map(([opens, rest]) => absolute([...opens, ...rest]));

// The shipped values (producer default cache 32, cursor default queue 16, the
// relay's GROUP_CACHE_SIZE as cache and as queue), drawn independently so the
// shipped pairs come up, and small caches that evict a lot: every property is
// checked at the defaults in the same run that checks it under eviction.
const configArb = fc.record({
  cache: fc.constantFrom(undefined, RELAY_DEFAULTS.GROUP_CACHE_SIZE, 1, 2, 3, 5),
  burstMs: fc.constantFrom(0, 50),
  withFetcher: fc.boolean(),
  // Room for this many one-byte groups (RELAY_CACHE_BYTES); undefined: no byte budget.
  bytes: fc.constantFrom(undefined, undefined, 1, 2, 4),
});

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function run(
  config: {
    cache: number | undefined;
    burstMs: number;
    withFetcher: boolean;
    bytes?: number | undefined;
  },
  ops: readonly Op[],
): Promise<void> {
  const clock = new ManualClock();
  const reported = { skipped: 0, delivered: 0 };
  const fetched: number[] = [];
  const model = new Model(
    config.cache ?? PRODUCER_DEFAULT_CACHE,
    config.burstMs,
    clock.now,
    config.bytes,
  );
  const track = new TrackProducer({
    ...(config.cache === undefined ? {} : { cache: config.cache }),
    ...(config.bytes === undefined ? {} : { cacheBytes: config.bytes }),
    burstMs: config.burstMs,
    clock: clock.now,
    observer: {
      skipped: (n) => {
        assert.ok(n > 0, "a skip report counts at least one group");
        reported.skipped += n;
      },
      delivered: () => reported.delivered++,
    },
    ...(config.withFetcher
      ? {
        fetchMissing: (seq: number) => {
          fetched.push(seq);
          return Promise.resolve({ frames: new Uint8Array([seq]), timestamp: 0 });
        },
      }
      : {}),
  });
  // `reached`: the latest skip point delivered; nothing below it may follow.
  const cursors: {
    real: ReturnType<TrackProducer["cursor"]>;
    model: ModelCursor;
    reached: number;
  }[] = [];
  const open: (typeof cursors)[number][] = [];

  const pollOnce = (c: (typeof cursors)[number]): boolean => {
    const m = c.model;
    const before = m.skipPoint;
    // The newest sequence the ring holds for it, should this poll skip.
    const pending = model.arrivals.slice(Math.max(m.index, model.oldest))
      .filter((a) => !a.dropped).map((a) => a.seq).filter((s) => s >= m.min);
    const got: CachedGroup | undefined = c.real.poll();
    const want = m.poll(model);
    assert.equal(got?.sequence, want, "the cursor delivers what the model says");
    assert.equal(c.real.skipped, m.skipped, "and counts the skips the model counts");
    if (m.skipPoint !== before) {
      assert.equal(want, Math.max(...pending), "a skip delivers the newest pending sequence");
    }
    if (want !== undefined) {
      assert.ok(want >= c.reached, `delivered ${want} below the skip point ${c.reached}`);
      if (want === m.skipPoint) c.reached = want;
    }
    return got !== undefined;
  };

  for (const o of ops) {
    switch (o.op) {
      case "write": {
        const accepted = track.writeGroup(o.seq, new Uint8Array([o.seq]));
        assert.equal(accepted, model.write(o.seq, open.map((c) => c.model)));
        assert.equal(track.staleWrites, model.stale, "duplicates are refused and counted");
        assert.equal(track.cached, model.held().length);
        assert.equal(track.latest, model.latest);
        break;
      }
      case "advance":
        clock.advance(o.ms);
        break;
      case "turn":
        await nextTurn(); // the producer's wake, scheduled by a write of this turn, runs first
        model.handOver();
        break;
      case "open": {
        const real = o.limit === undefined ? track.cursor(o.start) : track.cursor(o.start, o.limit);
        const c = {
          real,
          model: new ModelCursor(model, o.start, o.limit ?? CURSOR_DEFAULT_LIMIT),
          reached: -1,
        };
        assert.equal(real.skipped, c.model.skipped);
        cursors.push(c);
        open.push(c);
        break;
      }
      case "poll": {
        const c = open[o.cursor % Math.max(1, open.length)];
        for (let i = 0; c && i < o.times && pollOnce(c); i++);
        break;
      }
      case "close": {
        const c = open.splice(o.cursor % Math.max(1, open.length), 1)[0];
        c?.real.close();
        break;
      }
      case "fetch": {
        const inRing = model.held().some((a) => a.seq === o.seq);
        assert.equal(track.group(o.seq)?.sequence, inRing ? o.seq : undefined);
        const calls = fetched.length;
        const got = await track.fetch(o.seq);
        if (inRing) {
          assert.equal(got?.sequence, o.seq);
          assert.ok(got.index >= 0, "a cached group comes from the ring");
          assert.equal(fetched.length, calls, "the fetcher is not asked for a cached group");
        } else if (config.withFetcher) {
          assert.equal(got?.sequence, o.seq);
          assert.equal(got.index, -1, "a fetched group is not one of the ring's");
          assert.deepEqual(fetched.slice(calls), [o.seq]);
        } else {
          assert.equal(got, undefined);
        }
        break;
      }
    }
    assert.equal(track.subscribers, open.length);
  }

  // Drained, every cursor has accounted for exactly what it was owed.
  for (const c of open) while (pollOnce(c));
  for (const c of cursors) {
    const { delivered, skipped, owed, floor } = c.model;
    assert.equal(new Set(delivered).size, delivered.length, "each sequence at most once");
    for (const s of delivered) {
      assert.ok(owed.has(s), `delivered ${s}, which was written at or above the start ${floor}`);
    }
    if (open.includes(c)) {
      assert.equal(delivered.length + skipped, owed.size, "delivered + skipped = owed");
    }
  }
  const totalSkipped = cursors.reduce((n, c) => n + c.real.skipped, 0);
  assert.equal(reported.skipped, totalSkipped, "the observer hears of every skipped group");
  const totalDelivered = cursors.reduce((n, c) => n + c.model.delivered.length, 0);
  assert.equal(reported.delivered, totalDelivered);
  for (const c of open) c.real.close();
  await nextTurn(); // the burst wake scheduled by the writes
}

Deno.test("TrackProducer and its cursors follow the reference model", async () => {
  await checkAsync(
    fc.asyncProperty(configArb, opsArb, run),
    300,
  );
});

Deno.test("the model run covers skips by sequence past a late arrival", async () => {
  // A fixed run of the property's shape, the regression the model exists for.
  await run({ cache: undefined, burstMs: 0, withFetcher: false }, [
    { op: "open", start: 1, limit: 4 },
    ...[1, 2, 4, 5, 6, 7, 8, 9, 10, 3].map((seq) => ({ op: "write", seq }) as const),
    { op: "poll", cursor: 0, times: 100 },
    { op: "write", seq: 0 },
    { op: "write", seq: 11 },
  ]);
});
