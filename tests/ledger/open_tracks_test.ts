// The ledger's open-track map is bounded on single-writer backends: past the bound the
// least recently used idle tracks leave it; one still held is taken back (never a second
// ledger of a track, so never two writers numbering it), and one with an append in flight
// stays. A shared (PostgreSQL) ledger keeps every track it follows.
import assert from "node:assert/strict";
import {
  Ledger,
  type LedgerBackend,
  MAX_OPEN_TRACK_LEDGERS,
  MemoryBackend,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { PostgresBackend } from "../../src/ledger/postgres/postgres_backend.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { until } from "../support/wait.ts";

const path = (i: number): TrackPath => ({ broadcast: ["room", String(i)], track: "chat" });

Deno.test("at the default bound, the open tracks stay at it however many tracks are used", async () => {
  const ledger = new Ledger(new MemoryBackend());
  for (let i = 0; i < MAX_OPEN_TRACK_LEDGERS + 500; i++) {
    await (await ledger.track(path(i), true))!.append({ payload: String(i) });
  }
  assert.equal(ledger.openTracks, MAX_OPEN_TRACK_LEDGERS);
  // A track that left the map reads and numbers on as before when used again.
  const first = (await ledger.track(path(0), false))!;
  assert.equal(first.newest?.payload, "0");
  assert.equal((await first.append({ payload: "again" })).seq, 1);
  assert.equal(ledger.openTracks, MAX_OPEN_TRACK_LEDGERS);
  await ledger.close();
});

Deno.test("a track held while out of the map is taken back, not opened a second time", async () => {
  // A bound of 3 (the default is 10,000) so a handful of tracks crosses it.
  const ledger = new Ledger(new MemoryBackend(), { openTracks: 3 });
  const held = (await ledger.track(path(0), true))!;
  await held.append({ payload: "a" });
  for (let i = 1; i <= 5; i++) await ledger.track(path(i), true);
  assert.equal(ledger.openTracks, 3);
  assert.ok(held.retired, "the least recently used idle track left the map");
  // Still held, it counts as open (asking costs no storage call); a track never opened does not.
  assert.ok(ledger.isOpen({ broadcast: ["room", "0"], track: "chat" }));
  assert.ok(ledger.isOpen(path(5)));
  assert.equal(ledger.isOpen(path(99)), false);
  // Its holder still commits through it, and asking for the track gives the same ledger.
  assert.equal((await held.append({ payload: "b" })).seq, 1);
  const again = await ledger.track({ broadcast: ["room", "0"], track: "chat" }, false);
  assert.equal(again, held);
  assert.equal(held.retired, false);
  assert.equal((await again!.append({ payload: "c" })).seq, 2);
  assert.equal(ledger.openTracks, 3);
  await ledger.close();
});

Deno.test("a track with an append in flight stays open past the bound", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const memory = new MemoryBackend();
  // Appends to track 0 wait for the gate, so its commit is in flight while others open.
  const backend: LedgerBackend = {
    name: "memory",
    listTracks: () => memory.listTracks(),
    close: () => memory.close(),
    async openTrack(p, create): Promise<TrackBackend | undefined> {
      const track = await memory.openTrack(p, create);
      if (!track || p.broadcast[1] !== "0") return track;
      return {
        ...track,
        append: async (entries) => (await gate, await track.append(entries)),
        latest: () => track.latest(),
        readBefore: (b, l) => track.readBefore(b, l),
        readAfter: (a, l) => track.readAfter(a, l),
        get: (s) => track.get(s),
        erasePayload: (s) => track.erasePayload(s),
        first: () => track.first(),
        trim: (b) => track.trim(b),
      };
    },
  };
  const ledger = new Ledger(backend, { openTracks: 2 });
  const busy = (await ledger.track(path(0), true))!;
  const pending = busy.append({ payload: "in flight" });
  for (let i = 1; i <= 4; i++) await ledger.track(path(i), true);
  assert.equal(busy.retired, false, "not idle: kept");
  assert.equal(ledger.openTracks, 2);
  release();
  assert.equal((await pending).seq, 0);
  assert.equal(await ledger.track(path(0), false), busy);
  await ledger.close();
});

const pgUrl = await findPostgres();

Deno.test({
  name: "postgres: a shared ledger keeps every followed track open and publishes all others commit",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const table = freshTableName();
    // What the funnel publishes: each commit told, and the newest of a track learned of.
    const published = new Set<string>();
    // A bound of 2 (the default is 10,000), which a shared ledger does not apply: a track
    // reopened there would publish others' commits only from its newest on.
    const follower = new Ledger(await PostgresBackend.open(pgUrl!, table), {
      openTracks: 2,
    });
    follower.commits.subscribe({
      committed: (path, entries) => {
        for (const e of entries) published.add(`${path.broadcast[1]}:${e.payload}`);
      },
      trackCreated: (path, newest) => {
        if (newest) published.add(`${path.broadcast[1]}:${newest.payload}`);
      },
    });
    const writer = new Ledger(await PostgresBackend.open(pgUrl!, table));
    try {
      await follower.follow();
      // Held here the way a Durable Stream's state holds its track.
      const held = (await follower.track(path(0), true))!;
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 5; i++) {
          await (await writer.track(path(i), true))!.append({ payload: String(round) });
        }
      }
      const want = [0, 1, 2].flatMap((round) => [0, 1, 2, 3, 4].map((i) => `${i}:${round}`));
      await until(() => published.size >= want.length, "every commit published");
      assert.deepEqual([...published].sort(), [...want].sort());
      assert.equal(follower.openTracks, 5);
      // The held ledger learned the others' commits, so it numbers on after them.
      assert.equal((await held.append({ payload: "mine" })).seq, 3);
      assert.equal(await follower.track(path(0), false), held);
    } finally {
      await writer.close();
      await follower.close();
      await dropTable(pgUrl!, table);
    }
  },
});
