// A producer with `burstMs` (as the relay's are): groups written in one
// event-loop turn reach waiting cursors together, after the turn, and groups
// not handed to them yet, or handed over less than the window ago, are neither
// evicted for the cache size nor skipped for a cursor's queue bound.
import assert from "node:assert/strict";
import { MAX_BURST_GROUPS, TrackProducer } from "../../../src/moq/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";

const t = (s: string) => new TextEncoder().encode(s);

function drain(cursor: ReturnType<TrackProducer["cursor"]>): number[] {
  const out: number[] = [];
  for (let g = cursor.poll(); g; g = cursor.poll()) out.push(g.sequence);
  return out;
}

// The turn after this one: the producer's wake was scheduled before it.
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

Deno.test("with burstMs, a waiting cursor is woken once after the turn, for all of its writes", async () => {
  const track = new TrackProducer({ cache: 2, burstMs: 50 });
  const cursor = track.cursor(0, 2);
  let wakes = 0;
  cursor.onChange(() => wakes++);
  for (let seq = 0; seq < 6; seq++) track.writeGroup(seq, t(`${seq}`));
  assert.equal(wakes, 0, "not woken by each write");
  await nextTurn();
  assert.equal(wakes, 1, "woken once the turn is over");
  // Six groups, more than the cache (2) and the queue (2): all young, none lost.
  assert.deepEqual(drain(cursor), [0, 1, 2, 3, 4, 5]);
  assert.equal(cursor.skipped, 0);
  cursor.close();
});

Deno.test("without burstMs, a waiting cursor is woken by each write and bounded by counts", () => {
  const track = new TrackProducer({ cache: 2 });
  const cursor = track.cursor(0, 2);
  let wakes = 0;
  cursor.onChange(() => wakes++);
  track.writeGroup(0, t("0"));
  assert.equal(wakes, 1, "woken at the write");
  for (let seq = 1; seq < 6; seq++) track.writeGroup(seq, t(`${seq}`));
  assert.equal(track.cached, 2);
  assert.deepEqual(drain(cursor), [5], "behind by more than the queue: skips to the latest");
  cursor.close();
});

Deno.test("groups handed over longer than burstMs ago go by the cache size; a cursor behind by them skips", async () => {
  const clock = new ManualClock();
  const track = new TrackProducer({ cache: 2, burstMs: 50, clock: clock.now });
  const kept = track.cursor(0, 2);
  const stalled = track.cursor(0, 2);
  for (let seq = 0; seq < 5; seq++) track.writeGroup(seq, t(`${seq}`));
  await nextTurn(); // the wake hands the burst to the cursors
  assert.equal(track.cached, 5, "a young burst is kept whole");
  assert.deepEqual(drain(kept), [0, 1, 2, 3, 4]);
  clock.advance(50);
  track.writeGroup(5, t("5"));
  assert.equal(track.cached, 2, "once old, the burst goes down to the cache size");
  assert.deepEqual(drain(kept), [5], "a cursor that kept up loses nothing");
  assert.deepEqual(drain(stalled), [5], "one that stalled past the window skips to the latest");
  assert.equal(stalled.skipped, 5);
});

Deno.test("a cursor past its queue bound skips only once the group it is at is old", async () => {
  const clock = new ManualClock();
  const track = new TrackProducer({ cache: 16, burstMs: 50, clock: clock.now });
  const cursor = track.cursor(0, 2);
  for (let seq = 0; seq < 4; seq++) track.writeGroup(seq, t(`${seq}`));
  await nextTurn();
  assert.deepEqual(drain(cursor), [0, 1, 2, 3], "four behind, but all within the window");
  for (let seq = 4; seq < 8; seq++) track.writeGroup(seq, t(`${seq}`));
  await nextTurn();
  clock.advance(50);
  track.writeGroup(8, t("8"));
  assert.deepEqual(drain(cursor), [8], "five behind and the oldest is stale: to the latest");
  assert.equal(cursor.skipped, 4);
});

Deno.test("a turn that lasts past burstMs loses none of its groups to the cache size or a cursor's queue bound", async () => {
  // A relay under load: the turn that takes a backlog of upstream groups (or is descheduled
  // half-way) ends more than the window after its first write. Its groups were measured from
  // their writes: evicted before the wake that hands them over, and every cursor that had
  // read all before skipped to the newest (the relay chain lost 9 to 130 groups so).
  const clock = new ManualClock();
  const track = new TrackProducer({ cache: 2, burstMs: 50, clock: clock.now });
  const cursor = track.cursor(0, 2);
  track.writeGroup(0, t("0"));
  await nextTurn();
  assert.deepEqual(drain(cursor), [0], "it had read everything");
  for (let seq = 1; seq < 5; seq++) track.writeGroup(seq, t(`${seq}`));
  clock.advance(120); // still the same turn
  for (let seq = 5; seq < 7; seq++) track.writeGroup(seq, t(`${seq}`));
  assert.equal(track.cached, 6, "only 0, handed over 120 ms ago, went for the cache size");
  await nextTurn();
  assert.deepEqual(drain(cursor), [1, 2, 3, 4, 5, 6], "the cursor gets the whole turn");
  assert.equal(cursor.skipped, 0);
  // Once handed over, the window runs as before: 50 ms on, the burst goes down to the cache.
  clock.advance(50);
  track.writeGroup(7, t("7"));
  assert.equal(track.cached, 2);
  assert.deepEqual(drain(cursor), [7]);
  cursor.close();
});

Deno.test("a burst keeps at most MAX_BURST_GROUPS beyond the cache size", () => {
  const track = new TrackProducer({ cache: 4, burstMs: 60_000 });
  for (let seq = 0; seq < 4 + MAX_BURST_GROUPS + 10; seq++) track.writeGroup(seq, t("x"));
  assert.equal(track.cached, 4 + MAX_BURST_GROUPS);
});

Deno.test("with burstMs, closing wakes waiting cursors at once", () => {
  const track = new TrackProducer({ burstMs: 50 });
  const cursor = track.cursor();
  let wakes = 0;
  cursor.onChange(() => wakes++);
  track.close();
  assert.equal(wakes, 1);
});
