// The ledger's commit feed: each reader in its own right, ordered, bounded, never on the commit path.
import assert from "node:assert/strict";
import {
  type CommitInfo,
  Ledger,
  type LedgerBackend,
  type LedgerEntry,
  MAX_QUEUED_ENTRIES,
  MemoryBackend,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { until } from "../support/wait.ts";

const A: TrackPath = { broadcast: ["room", "a"], track: "chat" };
const B: TrackPath = { broadcast: ["room", "b"], track: "chat" };

/** A memory backend that counts the reads the feed makes for a reader that fell behind. */
class CountedReads implements LedgerBackend {
  readonly name = "counted";
  readonly #inner = new MemoryBackend();
  reads = 0;
  listTracks(): Promise<TrackPath[]> {
    return this.#inner.listTracks();
  }
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const track = await this.#inner.openTrack(path, create);
    if (!track) return undefined;
    const readAfter = (after: number | undefined, limit: number) => {
      this.reads++;
      return track.readAfter(after, limit);
    };
    return new Proxy(track, {
      get: (target, key) => {
        if (key === "readAfter") return readAfter;
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** A reader that takes one batch only when released: the slowest reader there is. */
class HeldReader {
  readonly told: string[] = [];
  calls = 0;
  #release: (() => void) | undefined;
  #held: Promise<void> = new Promise((resolve) => (this.#release = resolve));

  committed(path: TrackPath, entries: readonly LedgerEntry[]): Promise<void> {
    this.calls++;
    for (const e of entries) this.told.push(`${path.broadcast[1]}:${e.seq}`);
    return this.#held;
  }

  release(): void {
    this.#release?.();
    this.#held = Promise.resolve();
  }
}

function expected(track: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${track}:${i}`);
}

Deno.test("a reader that does not take its batches holds up no commit and no other reader", async () => {
  const backend = new CountedReads();
  const ledger = new Ledger(backend);
  const held = new HeldReader();
  // A bound of 64 (the default is MAX_QUEUED_ENTRIES), so the test crosses it quickly.
  const slow = ledger.commits.subscribe(held, { maxQueued: 64 });
  const fast: string[] = [];
  ledger.commits.subscribe({
    committed: (path, entries) =>
      void fast.push(...entries.map((e) => `${path.broadcast[1]}:${e.seq}`)),
  });
  try {
    const a = (await ledger.track(A, true))!;
    const b = (await ledger.track(B, true))!;
    // 1,000 appends on each track, one at a time: every one answers though the slow reader
    // has not taken even its first batch.
    for (let i = 0; i < 1000; i++) {
      await a.append({ payload: `${i}` });
      await b.append({ payload: `${i}` });
      assert.ok(slow.queued <= 64, `queued ${slow.queued} at ${i}`);
    }
    assert.equal(held.calls, 1, "the slow reader is still on its first batch");
    assert.equal(slow.overflows, 1);
    assert.equal(slow.behind, 2, "one range per track is remembered, not the entries");
    assert.equal(slow.queued, 0);
    assert.equal(backend.reads, 0, "nothing read back yet");
    assert.deepEqual(fast.filter((t) => t.startsWith("a")), expected("a", 1000));
    assert.deepEqual(fast.filter((t) => t.startsWith("b")), expected("b", 1000));

    // Released, it receives every entry once, in each track's order, read back in pages.
    held.release();
    await until(() => held.told.length >= 2000, "the slow reader caught up");
    assert.deepEqual(held.told.filter((t) => t.startsWith("a")), expected("a", 1000));
    assert.deepEqual(held.told.filter((t) => t.startsWith("b")), expected("b", 1000));
    assert.equal(slow.behind, 0);
    // 999 entries of a (its first was told live) and 1,000 of b, in pages of 256: 4 + 4.
    assert.equal(backend.reads, 8);

    // Caught up, it is told live again, without reading.
    const reads = backend.reads;
    await a.append({ payload: "live" });
    await until(() => held.told.length === 2001, "the live batch");
    assert.equal(held.told[2000], "a:1000");
    assert.equal(backend.reads, reads);
  } finally {
    await ledger.close();
  }
});

Deno.test("the default bound is MAX_QUEUED_ENTRIES, and an append answers before an async reader resolves", async () => {
  const ledger = new Ledger(new MemoryBackend());
  const held = new HeldReader();
  const subscription = ledger.commits.subscribe(held);
  try {
    const track = (await ledger.track(A, true))!;
    const first = await track.append({ payload: "0" });
    assert.equal(first.seq, 0);
    assert.deepEqual(held.told, ["a:0"], "told before the appender resumed, not waited on");
    for (let i = 1; i <= MAX_QUEUED_ENTRIES; i++) await track.append({ payload: `${i}` });
    assert.equal(subscription.queued, MAX_QUEUED_ENTRIES);
    assert.equal(subscription.overflows, 0);
    await track.append({ payload: "one more" });
    assert.equal(subscription.overflows, 1);
    assert.equal(subscription.queued, 0);
  } finally {
    held.release();
    await ledger.close();
  }
});

Deno.test("a reader that throws loses nothing for the others, and the commit stands", async () => {
  const ledger = new Ledger(new MemoryBackend());
  const told: [string, number][] = [];
  const infos: CommitInfo[] = [];
  const quiet = console.error;
  console.error = () => {};
  const broken = ledger.commits.subscribe({
    committed: () => {
      throw new Error("broken reader");
    },
  });
  ledger.commits.subscribe({
    trackCreated: (path) => void told.push([`created ${path.broadcast[1]}`, -1]),
    committed: (path, entries, info) => {
      infos.push(info);
      for (const e of entries) told.push([path.broadcast[1]!, e.seq]);
    },
  });
  try {
    assert.equal(await ledger.create(A), true);
    assert.equal(await ledger.create(A), false, "an existing track is not created again");
    const track = (await ledger.track(A, false))!;
    assert.equal((await track.append({ payload: "1" })).seq, 0);
    assert.equal((await track.append({ payload: "2" })).seq, 1);
    await until(() => told.length === 3, "the good reader's batches");
    assert.deepEqual(told, [["created a", -1], ["a", 0], ["a", 1]]);
    assert.equal(broken.failures, 2);
    assert.equal(infos[0]!.learned, 0);
    assert.ok(infos[0]!.at <= performance.timeOrigin + performance.now());
  } finally {
    console.error = quiet;
    await ledger.close();
  }
});

Deno.test("restore tells every reader of every stored track as stored, opening none; a use opens one", async () => {
  const backend = new MemoryBackend();
  const before = new Ledger(backend);
  await (await before.track(A, true))!.append({ payload: "x" });
  await before.track(B, true);
  const ledger = new Ledger(backend);
  const stored: string[] = [];
  const created: string[] = [];
  ledger.commits.subscribe({
    tracksStored: (paths) => void stored.push(...paths.map((p) => p.broadcast[1]!)),
    trackCreated: (path, newest) => void created.push(`${path.broadcast[1]}:${newest?.payload}`),
  });
  await ledger.restore();
  assert.deepEqual(stored.sort(), ["a", "b"]);
  assert.equal(ledger.openTracks, 0, "no track opened");
  // The first use opens the track and reads its newest entry; readers heard of it already.
  assert.equal((await ledger.track(A, false))?.newest?.payload, "x");
  assert.equal(ledger.openTracks, 1);
  assert.deepEqual(created, []);
  await ledger.close();
});

// A reader held past its bound is told a track's events in the order they came, though what it
// missed is read back: a creation told after entries 0..9 comes after them, the entries after it
// later.
Deno.test("a reader that fell behind is told a track's creation where it came among its entries", async () => {
  const ledger = new Ledger(new MemoryBackend());
  const log: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  ledger.commits.subscribe({
    trackCreated: (_path, newest) => {
      log.push(`created ${newest?.seq}`);
      return held;
    },
    committed: (_path, entries) => {
      for (const e of entries) log.push(`${e.seq}`);
      return held;
    },
  }, { maxQueued: 4 });
  const track = (await ledger.track(A, true))!;
  for (let i = 0; i < 10; i++) await track.append({ payload: "x" });
  ledger.commits.trackCreated(A, track.newest); // as a track learned late is: its newest, 9
  for (let i = 0; i < 3; i++) await track.append({ payload: "x" });
  release();
  await until(() => log.length === 14, "every event");
  assert.deepEqual(log, [
    ...Array.from({ length: 10 }, (_, i) => `${i}`),
    "created 9",
    "10",
    "11",
    "12",
  ]);
  await ledger.close();
});
