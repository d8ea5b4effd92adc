// A shared ledger's resync (after its LISTEN came back) reads every open track on its own:
// a track whose read keeps failing is retried with backoff and holds up no other track.
// The storage is the real memory backend, shared by a writer and a follower, with a switch
// that makes one track's newest-record read fail.
import assert from "node:assert/strict";
import {
  Ledger,
  type LedgerBackend,
  type LedgerEvents,
  MemoryBackend,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { until } from "../support/wait.ts";

const T1: TrackPath = { broadcast: ["room"], track: "one" };
const T2: TrackPath = { broadcast: ["room"], track: "two" };

Deno.test("ledger: a resync read that keeps failing on one track holds up no other, and is retried until it succeeds", async () => {
  const memory = new MemoryBackend();
  let events: LedgerEvents | undefined;
  let failing = true;
  let failures = 0;
  const shared: LedgerBackend = {
    name: "memory",
    listTracks: () => memory.listTracks(),
    async openTrack(path, create): Promise<TrackBackend | undefined> {
      const t = await memory.openTrack(path, create);
      if (!t) return undefined;
      return {
        append: (e) => t.append(e),
        latest: () => {
          if (path.track === "one" && failing && events) {
            failures++;
            return Promise.reject(new Error("read failed"));
          }
          return t.latest();
        },
        readBefore: (b, l) => t.readBefore(b, l),
        readAfter: (a, l) => t.readAfter(a, l),
        get: (s) => t.get(s),
        erasePayload: (s) => t.erasePayload(s),
        first: () => t.first(),
        trim: (b) => t.trim(b),
      };
    },
    close: () => Promise.resolve(),
    follow(e): Promise<() => Promise<void>> {
      events = e;
      return Promise.resolve(() => Promise.resolve());
    },
  };
  const published: string[] = [];
  const follower = new Ledger(shared);
  follower.commits.subscribe({
    committed: (path, entries) =>
      void published.push(...entries.map((e) => `${path.track}:${e.payload}`)),
  });
  const writer = new Ledger(memory);
  try {
    await (await writer.track(T1, true))!.append({ payload: "1" });
    await (await writer.track(T2, true))!.append({ payload: "2" });
    await follower.track(T1, false);
    await follower.track(T2, false);
    await follower.follow();
    // Committed while the follower was not listening: it heard no notice of these.
    await (await writer.track(T1, false))!.append({ payload: "11" });
    await (await writer.track(T2, false))!.append({ payload: "22" });
    events!.resync();
    await until(() => published.includes("two:22"), "the healthy track to be published");
    await until(() => failures >= 2, "the failing track's read to be retried");
    assert.deepEqual(published, ["two:22"]);
    failing = false;
    await until(() => published.includes("one:11"), "the failed track to be published");
    assert.deepEqual(published, ["two:22", "one:11"]);
  } finally {
    await follower.close();
    await writer.close();
  }
});

Deno.test("ledger: a shared ledger's restore and resync open no track: tracks created while not listening are told as stored, once", async () => {
  const memory = new MemoryBackend();
  let events: LedgerEvents | undefined;
  // Shared, as PostgreSQL is; the notices are left out, as while not listening.
  const shared: LedgerBackend = {
    name: "memory",
    listTracks: () => memory.listTracks(),
    openTrack: (path, create) => memory.openTrack(path, create),
    close: () => Promise.resolve(),
    follow(e): Promise<() => Promise<void>> {
      events = e;
      return Promise.resolve(() => Promise.resolve());
    },
  };
  const writer = new Ledger(memory);
  const follower = new Ledger(shared);
  const stored: string[][] = [];
  follower.commits.subscribe({
    tracksStored: (paths) => void stored.push(paths.map((p) => p.track)),
  });
  try {
    await (await writer.track(T1, true))!.append({ payload: "1" });
    await follower.follow();
    await follower.restore();
    assert.deepEqual(stored, [["one"]]);
    await writer.track(T2, true);
    events!.resync();
    await until(() => stored.length === 2, "the track created meanwhile");
    assert.deepEqual(stored, [["one"], ["two"]], "each told once");
    assert.equal(follower.openTracks, 0, "none opened");
    assert.equal((await follower.track(T1, false))?.newest?.payload, "1", "opened when used");
  } finally {
    await follower.close();
    await writer.close();
  }
});
