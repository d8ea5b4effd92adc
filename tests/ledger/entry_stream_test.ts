// A catch-up of a long track through the ledger stream never holds the track in memory: the
// stream pages storage only as fast as a slow reader takes entries.
import assert from "node:assert/strict";
import {
  DirectoryBackend,
  entryStream,
  type LedgerBackend,
  type LedgerEntry,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { PostgresBackend } from "../../src/ledger/postgres/postgres_backend.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { settled } from "../support/wait.ts";

const RECORDS = 100_000;
const PAGE = 256;
const PATH: TrackPath = { broadcast: ["catch", "up"], track: "chat" };
const FIRST_WALLCLOCK = 1_800_000_000_123_456_789n;

/** Writes RECORDS entries straight through the backend, 1000 per batch. */
async function fill(track: TrackBackend): Promise<void> {
  for (let start = 0; start < RECORDS; start += 1000) {
    const batch: LedgerEntry[] = [];
    for (let seq = start; seq < start + 1000; seq++) {
      batch.push({
        epoch: 1,
        seq,
        wallclock: FIRST_WALLCLOCK + BigInt(seq),
        sender: `s${seq % 7}`,
        payload: `{"n":${seq},"text":"${"x".repeat(40)}"}`,
      });
    }
    await track.append(batch);
  }
}

/** The track's backend, counting how many entries its reads returned. */
function counting(track: TrackBackend): { backend: TrackBackend; fetched: () => number } {
  let fetched = 0;
  const count = (page: LedgerEntry[]) => (fetched += page.length, page);
  return {
    backend: {
      append: (entries) => track.append(entries),
      latest: () => track.latest(),
      readBefore: async (before, limit) => count(await track.readBefore(before, limit)),
      readAfter: async (after, limit) => count(await track.readAfter(after, limit)),
      get: (seq) => track.get(seq),
      erasePayload: (seq) => track.erasePayload(seq),
      first: () => track.first(),
      trim: (before) => track.trim(before),
    },
    fetched: () => fetched,
  };
}

async function catchUpSlowly(open: () => Promise<LedgerBackend>): Promise<void> {
  const ledger = await open();
  try {
    await fill((await ledger.openTrack(PATH, true))!);
    const { backend, fetched } = counting((await ledger.openTrack(PATH, false))!);
    let consumed = 0;
    let mostAhead = 0;
    const reader = entryStream(backend, { after: undefined }, { pageSize: PAGE }).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      assert.equal(value.seq, consumed, "entries arrive in commit order with no gap");
      consumed++;
      // What the stream fetched but the reader has not taken is at most one page.
      mostAhead = Math.max(mostAhead, fetched() - consumed);
      assert.ok(fetched() - consumed <= PAGE, `fetched ${fetched()} with ${consumed} read`);
      // A slow reader: it yields to timers every few hundred entries.
      if (consumed % 300 === 0) await settled(1);
    }
    assert.equal(consumed, RECORDS);
    assert.equal(fetched(), RECORDS, "every entry was read from storage exactly once");
    assert.ok(mostAhead > 0 && mostAhead <= PAGE);

    // Backward from the newest, and forward from the middle, with a limit: the same bound.
    const back = counting((await ledger.openTrack(PATH, false))!);
    const newestFirst = entryStream(back.backend, { direction: "backward", limit: 1000 }, {
      pageSize: PAGE,
    });
    let expected = RECORDS - 1;
    for await (const entry of newestFirst) {
      assert.equal(entry.seq, expected--);
      assert.ok(back.fetched() - (RECORDS - 1 - expected) <= PAGE);
    }
    assert.equal(expected, RECORDS - 1001);
    const middle = await Array.fromAsync(
      entryStream(backend, { after: 49_999, limit: 3 }, { pageSize: PAGE }),
    );
    assert.deepEqual(middle.map((e) => e.seq), [50_000, 50_001, 50_002]);
    assert.equal(middle[0]?.wallclock, FIRST_WALLCLOCK + 50_000n);
  } finally {
    await ledger.close();
  }
}

Deno.test("ledger stream: a 100,000-record catch-up from a directory holds one page ahead", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-stream-" });
  try {
    await catchUpSlowly(() => DirectoryBackend.open(dir));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const pgUrl = await findPostgres();

Deno.test({
  name: "ledger stream: a 100,000-record catch-up from PostgreSQL holds one page ahead",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const table = freshTableName();
    try {
      await catchUpSlowly(() => PostgresBackend.open(pgUrl!, table, { maxConnections: 2 }));
    } finally {
      await dropTable(pgUrl!, table);
    }
  },
});

Deno.test("ledger stream: a failing read errors the stream, and cancelling stops the reads", async () => {
  let reads = 0;
  const failing: TrackBackend = {
    append: () => Promise.resolve(),
    latest: () => Promise.resolve(undefined),
    readBefore: () => Promise.resolve([]),
    readAfter: (after, limit) => {
      reads++;
      if (reads === 3) return Promise.reject(new Error("disk gone"));
      const from = (after ?? -1) + 1;
      return Promise.resolve(
        Array.from({ length: limit }, (_, i) => ({ epoch: 1, seq: from + i, wallclock: 0n })),
      );
    },
    get: () => Promise.resolve(undefined),
    erasePayload: () => Promise.resolve(),
    first: () => Promise.resolve(0),
    trim: () => Promise.resolve(0),
  };
  const seen: number[] = [];
  await assert.rejects(async () => {
    for await (const entry of entryStream(failing, {}, { pageSize: 4 })) seen.push(entry.seq);
  }, /disk gone/);
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7]);

  reads = 0;
  const reader = entryStream(failing, {}, { pageSize: 4 }).getReader();
  assert.equal((await reader.read()).value?.seq, 0);
  await reader.cancel();
  assert.equal(reads, 1, "a cancelled stream reads nothing more");
  assert.throws(() => entryStream(failing, {}, { pageSize: 0 }), RangeError);
});
