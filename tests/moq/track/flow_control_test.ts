// A flow-controlled producer (`lagMs`, as the funnel's record tracks are): a
// cursor is never skipped for its queue's length; what the cache dropped
// before the cursor took it is read back through `fetchMissing`, in order;
// only a cursor whose next group waited longer than `lagMs` skips ahead, and
// that skip is counted.
import assert from "node:assert/strict";
import { HOLE_WAIT_MS, type TrackCursor, TrackProducer } from "../../../src/moq/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { GroupRing } from "../../../src/moq/track/group_ring.ts";
import { MAX_PASSED_HOLES, PassedHoles } from "../../../src/moq/track/passed_holes.ts";

const t = (s: string) => new TextEncoder().encode(s);
const text = (frames: readonly Uint8Array[]) => new TextDecoder().decode(frames[0]);

// The whole track as the "ledger": every group ever written, by sequence.
function flowTrack(clock: ManualClock, lagMs = 30_000, cache = 4, cacheMs = 0) {
  const written = new Map<number, string>();
  const reads: number[] = [];
  let skips = 0;
  let skippedGroups = 0;
  const track = new TrackProducer({
    cache,
    cacheMs,
    lagMs,
    clock: clock.now,
    fetchMissing: (sequence) => {
      reads.push(sequence);
      const body = written.get(sequence);
      return Promise.resolve(body === undefined ? undefined : { frames: t(body), timestamp: 0 });
    },
    observer: {
      skipped: (count, forward) => {
        if (forward) skips++;
        skippedGroups += count;
      },
    },
  });
  const write = (seq: number) => {
    written.set(seq, `g${seq}`);
    track.writeGroup(seq, t(`g${seq}`));
  };
  return {
    track,
    write,
    /** Puts `seq` where missing groups are read only (it never reached the producer). */
    store: (seq: number) => void written.set(seq, `g${seq}`),
    reads,
    get skips() {
      return skips;
    },
    get skippedGroups() {
      return skippedGroups;
    },
  };
}

async function take(cursor: TrackCursor, n: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < n) {
    const group = await cursor.next(AbortSignal.timeout(5000));
    assert.ok(group, `group ${out.length + 1} of ${n} came`);
    out.push(text(group.frames));
  }
  return out;
}

Deno.test("a burst far larger than the cache reaches a cursor whole, in order", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock);
  f.write(1);
  const cursor = f.track.cursor();
  assert.deepEqual(await take(cursor, 1), ["g1"]);
  // One commit batch of 1,000 records, written in one turn: 250 times the cache.
  for (let seq = 2; seq <= 1001; seq++) f.write(seq);
  const got = await take(cursor, 1000);
  assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => `g${i + 2}`));
  assert.equal(cursor.skipped, 0);
  assert.equal(f.skips, 0);
  assert.ok(f.reads.length >= 990, `read back what the cache dropped (${f.reads.length})`);
  assert.ok(f.reads.length <= 1000, "each at most once");
  cursor.close();
});

Deno.test("a cursor whose next group waited past lagMs skips to the newest, counted once", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock, 30_000);
  const fast = f.track.cursor(0);
  const slow = f.track.cursor(0);
  for (let seq = 1; seq <= 100; seq++) {
    f.write(seq);
    clock.advance(100);
    assert.deepEqual(await take(fast, 1), [`g${seq}`]);
  }
  // The slow one took nothing for 10 s: behind, but not slower than the track yet.
  assert.deepEqual(await take(slow, 3), ["g1", "g2", "g3"]);
  assert.equal(f.skips, 0);
  // 30 s later its next group has waited too long: it skips to the newest.
  clock.advance(30_000);
  f.write(101);
  assert.deepEqual(await take(fast, 1), ["g101"]);
  assert.deepEqual(await take(slow, 1), ["g101"]);
  assert.equal(f.skips, 1, "one skip");
  assert.equal(slow.skipped, 97, "g4..g100 passed over");
  assert.equal(fast.skipped, 0);
  fast.close();
  slow.close();
});

Deno.test("without lagMs a cursor behind its queue bound still skips (media tracks)", () => {
  const track = new TrackProducer({ cache: 4 });
  const cursor = track.cursor(0, 2);
  for (let seq = 0; seq < 10; seq++) track.writeGroup(seq, t(`${seq}`));
  assert.equal(cursor.poll()?.sequence, 9);
  assert.equal(cursor.skipped, 9);
  cursor.close();
});

Deno.test("a read back that fails is tried again: every group still comes, in order", async () => {
  const clock = new ManualClock();
  let failures = 2;
  const track = new TrackProducer({
    cache: 2,
    lagMs: 30_000,
    clock: clock.now,
    fetchMissing: (sequence) =>
      sequence === 5 && failures-- > 0
        ? Promise.reject(new Error("storage unavailable"))
        : Promise.resolve({ frames: t(`g${sequence}`), timestamp: 0 }),
  });
  const cursor = track.cursor(1);
  for (let seq = 1; seq <= 10; seq++) track.writeGroup(seq, t(`g${seq}`));
  const got = await take(cursor, 10);
  assert.deepEqual(got, Array.from({ length: 10 }, (_, i) => `g${i + 1}`));
  assert.equal(failures, -1, "read three times");
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("a cursor opened at the latest of an empty track starts at the first group written, reading nothing back", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock);
  const cursor = f.track.cursor();
  // The first group a relay receives may be far into the track (it subscribed at the latest).
  f.write(40);
  f.write(41);
  assert.deepEqual(await take(cursor, 2), ["g40", "g41"]);
  assert.deepEqual(f.reads, [], "nothing before its start is read back");
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("a hole among held groups is waited for a while, asked for, then passed; the group still comes if it arrives late", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock);
  const cursor = f.track.cursor(1);
  f.write(1);
  f.write(2);
  f.write(4); // 3 is on its way (another stream, a retransmission, a relay's repair)
  assert.equal(cursor.poll()?.sequence, 1);
  assert.equal(cursor.poll()?.sequence, 2);
  assert.equal(cursor.poll(), undefined, "waits for 3");
  assert.deepEqual(f.reads, [], "not asked for while it may still come");
  clock.advance(HOLE_WAIT_MS);
  assert.equal(
    (await cursor.next(AbortSignal.timeout(5000)))?.sequence,
    4,
    "then goes on without it",
  );
  assert.deepEqual(f.reads, [3], "once asked for where missing groups are read, which has none");
  f.write(3);
  assert.equal(cursor.poll()?.sequence, 3, "and delivers it when it comes");
  assert.equal(cursor.poll(), undefined);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("a hole among held groups that the source has (a relay's upstream) is read back in order", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock);
  const cursor = f.track.cursor(1);
  f.write(1);
  // 2 went missing on its way to this producer, but where missing groups are read has it.
  f.store(2);
  f.write(3);
  assert.equal(cursor.poll()?.sequence, 1);
  assert.equal(cursor.poll(), undefined, "waits for 2");
  clock.advance(HOLE_WAIT_MS);
  assert.deepEqual(await take(cursor, 2), ["g2", "g3"]);
  assert.deepEqual(f.reads, [2]);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("the holes a cursor remembers are bounded: past the bound the oldest are forgotten", () => {
  const ring = new GroupRing(4096, 0, () => 0);
  const holes = new PassedHoles();
  // Far more holes than the bound, as a publisher leaving gap after gap would make.
  for (let s = 0; s < MAX_PASSED_HOLES * 4; s += 2) holes.passed(s, s + 1, ring.written);
  // The oldest hole was forgotten: its late group is not delivered; the newest is.
  ring.append(0, t("0"), 0n, 0);
  ring.append(MAX_PASSED_HOLES * 4 - 2, t("n"), 0n, 0);
  const written = (s: number) => ring.find(s) !== undefined;
  assert.equal(holes.late(ring, written)?.sequence, MAX_PASSED_HOLES * 4 - 2);
  assert.equal(holes.late(ring, written), undefined);
  assert.deepEqual(holes.takeDropped(), [], "the forgotten hole is not read back either");
});

Deno.test("a cursor asking for groups written long before it opened has the lag bound to read them", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock);
  for (let seq = 1; seq <= 20; seq++) f.write(seq);
  // The track has been idle for an hour when a subscriber asks from group 1.
  clock.advance(3_600_000);
  const cursor = f.track.cursor(1);
  const got = await take(cursor, 20);
  assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => `g${i + 1}`));
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

// A relay's cache drops groups by age (RELAY_CACHE_MS): a subscriber stalled past the lag bound
// comes back to find every group it missed dropped and only the one written just now held.
Deno.test("a cursor back from a stall finds what it missed dropped by age: it skips, not reads its stall back", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock, 30_000, 32, 10_000);
  const fast = f.track.cursor(0);
  const slow = f.track.cursor(0);
  f.write(1);
  assert.deepEqual(await take(fast, 1), ["g1"]);
  assert.deepEqual(await take(slow, 1), ["g1"]);
  for (let seq = 2; seq <= 100; seq++) {
    f.write(seq);
    clock.advance(10);
    assert.deepEqual(await take(fast, 1), [`g${seq}`]);
  }
  clock.advance(31_000);
  f.write(101);
  assert.deepEqual(await take(fast, 1), ["g101"]);
  assert.deepEqual(await take(slow, 1), ["g101"], "the stalled cursor skips to the newest");
  assert.equal(slow.skipped, 99, "g2..g100 passed over");
  assert.equal(f.skips, 1, "one skip");
  fast.close();
  slow.close();
});

// The twin within the lag bound: a cursor back before its next group waited too long reads back
// what the cache dropped by age, and skips nothing.
Deno.test("a cursor back within the lag bound reads back what the cache dropped by age", async () => {
  const clock = new ManualClock();
  const f = flowTrack(clock, 30_000, 32, 10_000);
  const slow = f.track.cursor(0);
  f.write(1);
  assert.deepEqual(await take(slow, 1), ["g1"]);
  for (let seq = 2; seq <= 100; seq++) {
    f.write(seq);
    clock.advance(10);
  }
  clock.advance(15_000);
  f.write(101);
  const got = await take(slow, 100);
  assert.deepEqual(got, Array.from({ length: 100 }, (_, i) => `g${i + 2}`));
  assert.equal(slow.skipped, 0);
  slow.close();
});

Deno.test("a late group for a passed hole that the cache dropped before the cursor took it is read back, not lost", async () => {
  // Two funnels on one ledger: this one passed the other's record 3 (not committed yet where
  // it read), then learned it late together with more records than its cache holds.
  const clock = new ManualClock();
  const f = flowTrack(clock);
  const cursor = f.track.cursor(1);
  f.write(1);
  f.write(2);
  f.write(4);
  assert.deepEqual(await take(cursor, 2), ["g1", "g2"]);
  clock.advance(HOLE_WAIT_MS);
  assert.deepEqual(await take(cursor, 1), ["g4"], "3 was passed");
  f.write(3); // learned late ...
  for (let s = 5; s <= 9; s++) f.write(s); // ... with more than the cache (4) holds
  assert.equal(f.track.group(3), undefined, "the cache dropped 3 before the cursor took it");
  const got = await take(cursor, 6);
  assert.deepEqual(got.toSorted(), ["g3", "g5", "g6", "g7", "g8", "g9"]);
  assert.equal(cursor.poll(), undefined);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("a hole read back as not there, then written and dropped before the cursor took that answer, is read back, not lost", async () => {
  // A relay during an outage: its read back of record 3 found no route; the route came back
  // and delivered 3 with more records than the cache holds before the cursor looked again.
  const clock = new ManualClock();
  const f = flowTrack(clock);
  const cursor = f.track.cursor(1);
  f.write(1);
  f.write(2);
  f.write(4);
  assert.deepEqual(await take(cursor, 2), ["g1", "g2"]);
  clock.advance(HOLE_WAIT_MS);
  assert.equal(cursor.poll(), undefined, "3 is being read back");
  await new Promise((r) => setTimeout(r, 0)); // the read answers: not there
  assert.deepEqual(f.reads, [3]);
  f.write(3);
  for (let s = 5; s <= 9; s++) f.write(s);
  assert.equal(
    f.track.group(3),
    undefined,
    "the cache dropped 3 before the cursor took the answer",
  );
  const got = await take(cursor, 7);
  assert.deepEqual(got.toSorted(), ["g3", "g4", "g5", "g6", "g7", "g8", "g9"]);
  assert.equal(cursor.poll(), undefined);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("a late group for a passed hole that the byte budget dropped is read back, not lost", async () => {
  const clock = new ManualClock();
  const written = new Map<number, string>();
  const track = new TrackProducer({
    cache: 64,
    cacheBytes: 4, // two groups of two bytes
    lagMs: 30_000,
    clock: clock.now,
    fetchMissing: (sequence) => {
      const body = written.get(sequence);
      return Promise.resolve(body === undefined ? undefined : { frames: t(body), timestamp: 0 });
    },
  });
  const write = (seq: number) => {
    written.set(seq, `g${seq}`);
    track.writeGroup(seq, t(`g${seq}`));
  };
  const cursor = track.cursor(1);
  write(1);
  write(3);
  assert.deepEqual(await take(cursor, 1), ["g1"]);
  clock.advance(HOLE_WAIT_MS);
  assert.deepEqual(await take(cursor, 1), ["g3"], "2 was passed");
  write(2); // late, and dropped for the byte budget by the next writes
  write(4);
  write(5);
  assert.equal(track.group(2), undefined);
  assert.deepEqual((await take(cursor, 3)).toSorted(), ["g2", "g4", "g5"]);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});
