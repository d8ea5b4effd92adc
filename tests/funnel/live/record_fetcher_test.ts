// The funnel's reader for FETCHes past the live rings, over a real directory ledger.
import assert from "node:assert/strict";
import { RecordFetcher } from "../../../src/funnel/live/record_fetcher.ts";
import {
  DirectoryBackend,
  Ledger,
  type LedgerBackend,
  type TrackBackend,
  type TrackPath,
} from "../../../src/ledger/mod.ts";
import { withTempDir } from "../../support/temp_dir.ts";
import { until } from "../../support/wait.ts";

const ROOM: TrackPath = { broadcast: ["room", "1"], track: "chat" };

/** The backend with its forward reads counted, and payload erasure held until `erasing` resolves. */
function counted(inner: LedgerBackend): {
  backend: LedgerBackend;
  reads: () => number;
  erasing: { gate: Promise<void> };
} {
  let reads = 0;
  const erasing = { gate: Promise.resolve() };
  return {
    reads: () => reads,
    erasing,
    backend: {
      name: inner.name,
      listTracks: () => inner.listTracks(),
      close: () => inner.close(),
      async openTrack(path, create): Promise<TrackBackend | undefined> {
        const track = await inner.openTrack(path, create);
        return track && {
          append: (e) => track.append(e),
          latest: () => track.latest(),
          readBefore: (b, l) => track.readBefore(b, l),
          readAfter: (a, l) => (reads++, track.readAfter(a, l)),
          get: (s) => track.get(s),
          erasePayload: async (s) => (await erasing.gate, await track.erasePayload(s)),
          first: () => track.first(),
          trim: (b) => track.trim(b),
        };
      },
    },
  };
}

Deno.test("RecordFetcher reads a page per gap, not a record per FETCH, and serves redactions at once", async () => {
  await withTempDir(async (dir) => {
    const { backend, reads, erasing } = counted(await DirectoryBackend.open(dir));
    // The fetcher reads the ledger's commit feed from its construction on.
    const ledger = new Ledger(backend);
    const fetcher = new RecordFetcher(ledger, { pageSize: 16, pages: 4 });
    try {
      const track = (await ledger.track(ROOM, true))!;
      for (let i = 0; i < 100; i++) await track.append({ payload: `{"n":${i}}`, sender: "a" });

      // A gap of 40 records (16..55), fetched all at once: three aligned pages, three reads.
      const gap = await Promise.all(
        Array.from({ length: 40 }, (_, i) => fetcher.fetch(ROOM, 16 + i)),
      );
      assert.deepEqual(gap.map((e) => e?.seq), Array.from({ length: 40 }, (_, i) => 16 + i));
      assert.equal(reads(), 3);
      assert.equal((await fetcher.fetch(ROOM, 20))?.payload, `{"n":20}`);
      assert.equal(reads(), 3, "a kept page answers again");
      assert.equal(await fetcher.fetch(ROOM, 100), undefined, "past the newest: nothing read");
      assert.equal(await fetcher.fetch({ broadcast: ["no"], track: "such" }, 1), undefined);
      assert.equal(reads(), 3);

      // The page holding 96..99 was read while 100 did not exist: read again once it does.
      assert.equal((await fetcher.fetch(ROOM, 99))?.seq, 99);
      await track.append({ payload: `"late"` });
      assert.equal((await fetcher.fetch(ROOM, 100))?.payload, `"late"`);

      // A redaction: the record reads redacted at once, even from a page read before it.
      assert.equal((await fetcher.fetch(ROOM, 18))?.payload, `{"n":18}`);
      const before = reads();
      const outcome = await track.redact(18, "mod");
      assert.ok(outcome.redaction);
      const redacted = await fetcher.fetch(ROOM, 18);
      assert.equal(redacted?.redacted, true);
      assert.equal(redacted?.payload, undefined);
      assert.ok(reads() > before, "its page was dropped and read again");
      assert.equal((await fetcher.fetch(ROOM, 19))?.payload, `{"n":19}`);

      // Between the redaction's commit and the payload's erasure, storage still has the payload;
      // the record is served redacted all the same.
      let release!: () => void;
      erasing.gate = new Promise((resolve) => (release = resolve));
      const redacting = track.redact(19, "mod");
      const redactions = () => track.newest?.redacts;
      await until(() => redactions() === "e000001-g00000019", "the redaction's commit");
      const stored = (await track.backend.readAfter(18, 1))[0];
      assert.equal(stored?.payload, `{"n":19}`, "not erased yet");
      const early = await fetcher.fetch(ROOM, 19);
      assert.equal(early?.redacted, true);
      assert.equal(early?.payload, undefined);
      release();
      await redacting;
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("RecordFetcher keeps pages of large records within its byte budget, and still serves every record", async () => {
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir));
    // A budget of 3 records of 1 MB (the default is 32 MiB: the same rule, smaller numbers).
    const fetcher = new RecordFetcher(ledger, { pageSize: 64, pages: 16, pageBytes: 3_500_000 });
    try {
      const track = (await ledger.track(ROOM, true))!;
      const big = (i: number) => `"${String(i).padStart(6, "0")}${"x".repeat(1_000_000)}"`;
      for (let i = 0; i < 20; i++) await track.append({ payload: big(i), sender: "a" });
      let most = 0;
      for (let seq = 0; seq < 20; seq++) {
        const entry = await fetcher.fetch(ROOM, seq);
        assert.equal(entry?.seq, seq);
        assert.equal(entry?.payload, big(seq));
        most = Math.max(most, fetcher.keptBytes);
      }
      assert.ok(most <= 3_500_000, `kept ${most} bytes`);
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("RecordFetcher finds kept records of a compacted track and none of those compacted away", async () => {
  const { MemoryBackend, Retention } = await import("../../../src/ledger/mod.ts");
  const ledger = new Ledger(new MemoryBackend());
  const fetcher = new RecordFetcher(ledger);
  const track = (await ledger.track(ROOM, true))!;
  // 200 records over 10 keys: compaction keeps 0 (the track's first) and 190..199.
  for (let i = 0; i < 200; i++) await track.append({ payload: `{"k":${i % 10},"i":${i}}` });
  const retention = new Retention(ledger, {
    config: { default: { compactKey: "k" }, rules: [] },
  });
  assert.equal((await retention.pass())?.compacted, 189);
  for (const seq of [0, 190, 195, 199]) {
    assert.equal((await fetcher.fetch(ROOM, seq))?.payload, `{"k":${seq % 10},"i":${seq}}`);
  }
  // A compacted-away position is no record, and not "gone": the track still starts at 0.
  assert.equal(await fetcher.fetch(ROOM, 150), undefined);
  assert.equal(await fetcher.fetch(ROOM, 1), undefined);
  await ledger.close();
});
