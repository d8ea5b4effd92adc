import assert from "node:assert/strict";
import { SequenceWindow } from "../../src/moq/sequence_window.ts";

Deno.test("SequenceWindow takes each sequence once, in any order", () => {
  const w = new SequenceWindow(64);
  assert.equal(w.highest, -1);
  for (const s of [5, 3, 9, 4, 3, 9, 0]) w.add(s);
  assert.equal(w.highest, 9);
  for (const s of [0, 3, 4, 5, 9]) assert.equal(w.check(s), "seen", `${s}`);
  for (const s of [1, 2, 6, 7, 8, 10]) assert.equal(w.check(s), "new", `${s}`);
  assert.equal(w.add(4), false, "a duplicate is refused");
  assert.equal(w.add(7), true, "a late sequence is taken");
});

Deno.test("SequenceWindow slides: sequences below the window are old, slots are reused cleanly", () => {
  const w = new SequenceWindow(64);
  w.add(10);
  w.add(100); // slides past 10; slot 100 & 63 == 36 must not remember 36
  assert.equal(w.floor, 37);
  assert.equal(w.check(10), "old");
  assert.equal(w.add(10), false);
  for (let s = 37; s < 100; s++) assert.equal(w.check(s), "new", `${s}`);
  w.add(1_000_000); // a jump far beyond the window forgets everything before it
  assert.equal(w.check(999_999), "new");
  assert.equal(w.check(100), "old");
});

Deno.test("SequenceWindow rounds its size up to a power of two, at least 64", () => {
  const w = new SequenceWindow(100);
  w.add(200);
  assert.equal(w.floor, 200 - 127);
});
