// Idempotency-Keys stay in memory for a bounded number of tracks (most recently used);
// a track dropped reads its keys back from the ledger, after the commits its dropped
// keys were waiting on, so a retry is answered with the first record, never stored twice.
import assert from "node:assert/strict";
import { IDEMPOTENCY_TRACKS } from "../../src/funnel/idempotency.ts";
import { FunnelService } from "../../src/funnel/mod.ts";
import { Ledger, MemoryBackend, type TrackPath } from "../../src/ledger/mod.ts";

const poster = { sender: "alice", limitKey: "alice" };
const path = (n: number): TrackPath => ({ broadcast: ["room", String(n)], track: "chat" });

Deno.test("Idempotency-Keys are kept for a bounded number of tracks and read back when dropped", async () => {
  const ledger = new Ledger(new MemoryBackend());
  // Not the default (1024): two tracks, so a third drops one. The twin below is at the default.
  const service = new FunnelService({ ledger, idempotencyTracks: 2 });
  try {
    // A keyed POST still committing when its track's keys are dropped.
    const pending = service.post(path(0), poster, '{"n":0}', "key-0");
    for (let n = 1; n <= 4; n++) await service.post(path(n), poster, `{"n":${n}}`, `key-${n}`);
    assert.equal(service.idempotencyTracks, 2);
    const first = await pending;
    const retry = await service.post(path(0), poster, '{"n":0}', "key-0");
    assert.equal(retry.replayed, true);
    assert.equal(retry.group, first.group);
    for (let n = 1; n <= 4; n++) {
      const again = await service.post(path(n), poster, `{"n":${n}}`, `key-${n}`);
      assert.equal(again.replayed, true, `track ${n}`);
    }
    for (let n = 0; n <= 4; n++) {
      const track = (await ledger.track(path(n), false))!;
      assert.equal(track.newest?.seq, 0, `track ${n} stored its record once`);
    }
    assert.ok(service.idempotencyTracks <= 2);
  } finally {
    await ledger.close();
  }
});

Deno.test("At the default, 1024 tracks keep their keys in memory", async () => {
  const ledger = new Ledger(new MemoryBackend());
  const service = new FunnelService({ ledger });
  try {
    for (let n = 0; n < IDEMPOTENCY_TRACKS + 10; n++) {
      await service.post(path(n), poster, "1", "k");
    }
    assert.equal(service.idempotencyTracks, IDEMPOTENCY_TRACKS);
    assert.equal((await service.post(path(0), poster, "1", "k")).replayed, true);
  } finally {
    await ledger.close();
  }
});
