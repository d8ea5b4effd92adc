// The ring's bounds besides its count: age, bytes, and what neither count nor
// age drops (the group being written, the newest complete group), against a
// publisher that leaves a group open.
import assert from "node:assert/strict";
import { GroupRing, MAX_BURST_GROUPS } from "../../src/moq/track/group_ring.ts";
import { LiveFrames } from "../../src/moq/track/live_frames.ts";

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
