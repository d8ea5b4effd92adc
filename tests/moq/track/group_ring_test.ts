// The ring's bounds besides its count: age, bytes, and what neither count nor
// age drops (the group being written, the newest complete group), against a
// publisher that leaves a group open.
import assert from "node:assert/strict";
import {
  GroupRing,
  MAX_ABANDONED_GONE,
  MAX_BURST_GROUPS,
} from "../../../src/moq/track/group_ring.ts";
import { LiveFrames } from "../../../src/moq/track/live_frames.ts";
import { FRAME_COST } from "../../../src/moq/track/receive_budget.ts";
import { TrackProducer } from "../../../src/moq/track/track_producer.ts";

const bytes = (n: number) => new Uint8Array(n);

Deno.test("group ring: the count keeps the group being written however many arrive after it", () => {
  const ring = new GroupRing(2, 0, () => 0);
  const open = new LiveFrames(0n);
  ring.append(10, open, 0n, 0);
  for (let seq = 2; seq <= 9; seq++) ring.append(seq, bytes(1), 0n, 0);
  assert.equal(ring.find(10)?.live, open);
  open.finish();
  ring.append(11, bytes(1), 0n, 0);
  assert.equal(ring.length, 2, "once it is complete and not the newest, the count applies");
  assert.deepEqual(ring.from(0).map((g) => g.sequence), [9, 11]);
});

Deno.test("group ring: the age limit drops old groups but keeps the newest complete one", () => {
  let now = 0;
  const ring = new GroupRing(8, 0, () => now, { maxAgeMs: 1000 });
  ring.append(1, bytes(1), 0n, now);
  ring.append(2, bytes(1), 0n, now);
  now = 1500;
  const open = new LiveFrames(0n);
  ring.append(3, open, 0n, now);
  assert.deepEqual(ring.from(0).map((g) => g.sequence), [2, 3], "group 2: the newest complete");
  open.finish();
  now = 3000;
  ring.append(4, bytes(1), 0n, now);
  assert.deepEqual(ring.from(0).map((g) => g.sequence), [4]);
});

Deno.test("group ring: bytes and count plus the burst allowance are hard bounds, open groups or not", () => {
  const ring = new GroupRing(4, 0, () => 0, { maxBytes: 1000 });
  const open = new LiveFrames(0n);
  open.push(bytes(100));
  ring.append(1, open, 0n, 0);
  for (let seq = 2; seq <= 20; seq++) ring.append(seq, bytes(300), 0n, 0);
  assert.ok(ring.bytes <= 1000, `holds ${ring.bytes} B`);
  assert.equal(ring.find(1), undefined, "the open group went for the byte budget");
  // No byte budget: the count plus the burst allowance still bounds a ring behind an open group.
  const unbounded = new GroupRing(4, 0, () => 0);
  unbounded.append(0, new LiveFrames(0n), 0n, 0);
  for (let seq = 1; seq <= 600; seq++) unbounded.append(seq, bytes(1), 0n, 0);
  assert.ok(unbounded.length <= 4 + MAX_BURST_GROUPS + 1, `holds ${unbounded.length}`);
});

Deno.test("group ring: the byte budget drops the lowest sequences, so late groups cannot push out the newest", () => {
  // A burst that arrives out of order, as big groups on their own streams do: room for five.
  const ring = new GroupRing(8, 0, () => 0, { maxBytes: 5 * 100 });
  for (const seq of [7, 8, 9, 2, 3, 4, 5, 6]) ring.append(seq, bytes(100), 0n, 0);
  assert.deepEqual(ring.from(0).map((g) => g.sequence), [5, 6, 7, 8, 9]);
  assert.equal(ring.length, 5);
  assert.equal(ring.bytes, 500);
  // Arrival order still holds the places of 2, 3 and 4 (dropped from among later arrivals).
  assert.deepEqual([3, 4, 5].map((i) => [ring.at(i), ring.sequenceAt(i)]), [
    [undefined, 2],
    [undefined, 3],
    [undefined, 4],
  ]);
  assert.equal(ring.at(6)?.sequence, 5);
  // A late group below everything held goes at once; the held ones stay.
  ring.append(1, bytes(100), 0n, 0);
  assert.deepEqual(ring.from(0).map((g) => g.sequence), [5, 6, 7, 8, 9]);
});

Deno.test("group ring: a reader behind a reordered burst under the byte budget skips to the newest", () => {
  const track = new TrackProducer({ cache: 8, cacheBytes: 5 * 100 });
  const reader = track.cursor();
  track.writeGroup(1, bytes(1));
  assert.equal(reader.poll()?.sequence, 1);
  for (const seq of [7, 8, 9, 2, 3, 4, 5, 6]) track.writeGroup(seq, bytes(100));
  const got: number[] = [];
  for (let g = reader.poll(); g; g = reader.poll()) got.push(g.sequence);
  // 7, 8 and 9 in arrival order; at the place of dropped 2 it skips to the newest left unread.
  assert.deepEqual(got, [7, 8, 9, 6]);
  assert.equal(reader.skipped, 4, "2, 3 and 4 (dropped) and 5 (passed over)");
  assert.equal(track.cursor().poll()?.sequence, 9, "a joiner starts at the newest group");
});

Deno.test("a byte budget counts a lazily made group by its estimate, without making it", () => {
  const ring = new GroupRing(8, 0, () => 0, { maxBytes: 1000 });
  let made = 0;
  const lazy = () => {
    made++;
    return new Uint8Array(600);
  };
  ring.append(1, lazy, 0n, 0, 600);
  assert.equal(ring.bytes, 600);
  ring.append(2, lazy, 0n, 0, 600);
  // Over the budget: the lower sequence went, and neither group's frames were made.
  assert.equal(ring.length, 1);
  assert.equal(ring.bytes, 600);
  assert.equal(made, 0);
  // A group whose frames shrink later (a redaction) is taken off by what was counted.
  ring.at(1)!.replaceFrames(new Uint8Array(10));
  ring.append(3, new Uint8Array(500), 0n, 0);
  assert.equal(ring.length, 1);
  assert.equal(ring.bytes, 500);
});

Deno.test("a byte budget counts each frame past a group's first at FRAME_COST besides its payload", () => {
  // A group of 100,000 one-byte frames holds about 13 MB of heap, not 100 KB: counted as its
  // payload alone, a track's 32 MiB let a publisher of tiny frames make the cache hold gigabytes.
  const ring = new GroupRing(32, 0, () => 0, { maxBytes: 32 << 20 });
  const tiny = () => Array.from({ length: 100_000 }, () => new Uint8Array(1));
  for (let i = 0; i < 32; i++) ring.append(i, tiny(), 0n, 0);
  assert.ok(ring.bytes <= 32 << 20, `${ring.bytes} bytes counted`);
  assert.equal(ring.length, Math.floor((32 << 20) / (100_000 + 99_999 * FRAME_COST)));
  // A group of one frame counts its payload alone, as before.
  const single = new GroupRing(8, 0, () => 0, { maxBytes: 1000 });
  single.append(1, new Uint8Array(600), 0n, 0);
  assert.equal(single.bytes, 600);
});

Deno.test("group ring: abandoned groups the ring dropped stay missing for as long as the producer takes them late, and the memory of them is bounded", () => {
  // A group its publisher abandoned part-way (reset) is missing, not written, even once its partial
  // arrival left the ring (gap repair asks for it again); the ring remembers such sequences in a
  // set of at most MAX_ABANDONED_GONE, the span of late groups the producer still takes.
  const producer = new TrackProducer();
  const count = MAX_ABANDONED_GONE + 100;
  for (let s = 0; s < count; s++) {
    const live = new LiveFrames(0n);
    live.push(new Uint8Array([1]));
    producer.writeGroup(s, live);
    live.reset();
  }
  const floor = producer.lateFloor;
  assert.ok(floor > 0, "the track moved past the first groups' late floor");
  for (let s = floor; s < count; s++) {
    assert.equal(producer.holds(s), "missing", `abandoned group ${s}`);
  }
  assert.equal(producer.holds(floor - 1), "too old");
});
