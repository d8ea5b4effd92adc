// Compaction by key on every backend (memory, directory, PostgreSQL, S3): 100,000
// records over 1,000 keys leave history with the newest record of each key (and the
// track's first record, its start mark), at their original positions; a listener told of every commit saw all 100,000; records without a key,
// redactions and protocol entries stay.
import assert from "node:assert/strict";
import {
  Ledger,
  type LedgerEntry,
  Retention,
  type TrackLedger,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { parseRetentionPolicy } from "../../src/config/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { type BackendInstance, HARNESSES } from "./_backends.ts";

const STATE: TrackPath = { broadcast: ["state", "devices"], track: "last" };
const KEYS = 1000;
const TOTAL = 100_000;

function perBackend(name: string, body: (instance: BackendInstance) => Promise<void>): void {
  for (const harness of HARNESSES) {
    const needs = harness.needs;
    if (needs?.missing) console.warn(`SKIP ${harness.name} compaction: ${needs.missing}`);
    Deno.test({
      name: `compaction ${harness.name}: ${name}`,
      ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
      async fn() {
        const instance = await harness.setup();
        try {
          await body(instance);
        } finally {
          await instance.cleanup();
        }
      },
    });
  }
}

function compacting(ledger: Ledger, field = "device"): Retention {
  return new Retention(ledger, {
    config: { default: {}, rules: [{ prefix: "state", policy: { compactKey: field } }] },
  });
}

const payloadOf = (seq: number): string => JSON.stringify({ device: `d${seq % KEYS}`, seq });

/** Commits `count` records, `inFlight` at a time, round robin over the keys. */
async function post(track: TrackLedger, from: number, count: number): Promise<void> {
  const inFlight = 1000;
  for (let seq = from; seq < from + count; seq += inFlight) {
    const n = Math.min(inFlight, from + count - seq);
    await Promise.all(
      Array.from({ length: n }, (_, i) => track.append({ payload: payloadOf(seq + i) })),
    );
  }
}

perBackend("100,000 records over 1,000 keys keep the newest of each key", async (instance) => {
  const backend = await instance.open();
  const live: number[] = [];
  const ledger = new Ledger(backend, { deadlineMs: 0 });
  ledger.commits.subscribe({
    committed: (_path, entries) => void live.push(...entries.map((e) => e.seq)),
  });
  try {
    const track = (await ledger.track(STATE, true))!;
    const total = TOTAL;
    await post(track, 0, total);
    const report = (await compacting(ledger).pass())!;
    const history: LedgerEntry[] = await Array.fromAsync(track.entries({}));
    // Live listeners were told of every record, in order, whatever compaction did later.
    assert.equal(live.length, total);
    assert.ok(live.every((seq, i) => seq === i));
    assert.equal(report.uncompactable, 0);
    const newestOfKey = history.slice(1);
    assert.equal(newestOfKey.length, KEYS, "one record per key");
    assert.deepEqual(newestOfKey.map((e) => e.seq), range(total - KEYS, total));
    for (const e of history) assert.equal(e.payload, payloadOf(e.seq), `record ${e.seq} intact`);
    // The track's first record stays where it was, so no position is said to be gone.
    assert.equal(history[0]!.seq, 0);
    assert.equal(await track.first(), 0);
    assert.equal(report.compacted, total - KEYS - 1);
    // Positions never move: the newest is still numbered as committed, and the next too.
    assert.equal(track.newest!.seq, total - 1);
    assert.equal((await track.append({ payload: payloadOf(total) })).seq, total);
    assert.equal(await track.backend.get(total - KEYS - 1), undefined, "superseded: not stored");
    assert.equal((await track.backend.get(total - 1))?.payload, payloadOf(total - 1));
    // Paging backward and forward skips the removed positions.
    const page = await track.backend.readBefore(total - KEYS + 1, 2);
    assert.deepEqual(page.map((e) => e.seq), [total - KEYS, 0]);
    const forward = await track.backend.readAfter(0, 2);
    assert.deepEqual(forward.map((e) => e.seq), [total - KEYS, total - KEYS + 1]);
    // A second pass has nothing more to remove but the one superseded just now.
    assert.equal((await compacting(ledger).pass())!.compacted, 1);
  } finally {
    await ledger.close();
  }
  // Opened again (a restart, for the backends that keep anything), the compacted view stays.
  const again = new Ledger(await instance.open(), { deadlineMs: 0 });
  try {
    const track = (await again.track(STATE, false))!;
    const history = await Array.fromAsync(track.entries({}));
    assert.deepEqual(history.map((e) => e.seq), [0, ...range(TOTAL - KEYS + 1, TOTAL + 1)]);
    assert.equal((await track.append({ payload: payloadOf(TOTAL + 1) })).seq, TOTAL + 1);
  } finally {
    await again.close();
  }
});

perBackend("records without a key, redactions and protocol entries stay", async (instance) => {
  const backend = await instance.open();
  const ledger = new Ledger(backend, { deadlineMs: 0 });
  try {
    const track = (await ledger.track(STATE, true))!;
    const kept = [
      await track.append({ payload: `{"other":1}` }),
      await track.append({ payload: `[1,2]` }),
      await track.append({ payload: `{"device":{"nested":true}}` }),
      await track.append({ payload: `{"device":"a","n":1}`, meta: `{"protocol":true}` }),
      await track.append({ payload: `{"device":"${"x".repeat(2000)}"}` }),
      await track.append({ payload: `{"device":"${"x".repeat(2000)}"}` }),
    ];
    const a1 = await track.append({ payload: `{"device":"a","n":2}` });
    const n7 = await track.append({ payload: `{"device":7}` });
    const s7 = await track.append({ payload: `{"device":"7"}` });
    const redaction = await track.redact(a1.seq, undefined);
    const a3 = await track.append({ payload: `{"device":"a","n":3}` });
    const report = (await compacting(ledger).pass())!;
    const seqs = (await Array.fromAsync(track.entries({}))).map((e) => e.seq);
    // A redacted record has no payload, so no key: it stays, like the rest.
    assert.deepEqual(seqs, [
      ...kept.map((e) => e.seq),
      a1.seq,
      n7.seq,
      s7.seq,
      redaction.redaction!.seq,
      a3.seq,
    ]);
    assert.equal(report.compacted, 0);
    const a4 = await track.append({ payload: `{"device":"a","n":4}` });
    assert.equal((await compacting(ledger).pass())!.compacted, 1, "a3 superseded by a4");
    assert.equal(await track.backend.get(a3.seq), undefined);
    assert.equal((await track.backend.get(a4.seq))?.payload, `{"device":"a","n":4}`);
  } finally {
    await ledger.close();
  }
});

Deno.test("a track that starts with protocol metadata (a Durable Stream) is not compacted", async () => {
  const { MemoryBackend } = await import("../../src/ledger/mod.ts");
  const ledger = new Ledger(new MemoryBackend(), { deadlineMs: 0 });
  const track = (await ledger.track(STATE, true))!;
  await track.append({ payload: `{}`, meta: `{"created":true}` });
  for (let i = 0; i < 20; i++) await track.append({ payload: `{"device":${i % 2}}` });
  assert.equal((await compacting(ledger).pass())!.compacted, 0);
  assert.equal((await Array.fromAsync(track.entries({}))).length, 21);
});

Deno.test("compaction remembers at most its key bound; records of keys beyond it stay", async () => {
  const { MemoryBackend } = await import("../../src/ledger/mod.ts");
  const ledger = new Ledger(new MemoryBackend(), { deadlineMs: 0 });
  const track = (await ledger.track(STATE, true))!;
  // Keys 0..9 twice: the newest 10 records are read first, so a bound of 4 keys
  // remembers the keys of seq 19..16 and removes only their older records 9..6.
  for (let i = 0; i < 20; i++) await track.append({ payload: `{"device":${i % 10}}` });
  const retention = new Retention(ledger, {
    config: { default: { compactKey: "device" }, rules: [] },
    compactionKeys: 4,
  });
  assert.equal((await retention.pass())!.compacted, 4);
  const seqs = (await Array.fromAsync(track.entries({}))).map((e) => e.seq);
  assert.deepEqual(seqs, [0, 1, 2, 3, 4, 5, ...range(10, 20)]);
});

Deno.test("compact=<field> parses beside the limits and refuses a bad field", () => {
  assert.deepEqual(parseRetentionPolicy("compact=device age=7d"), {
    compactKey: "device",
    maxAgeMs: 604_800_000,
  });
  assert.throws(() => parseRetentionPolicy("compact="), /key field/);
  assert.throws(() => parseRetentionPolicy("compact=a.b"), /key field/);
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}
