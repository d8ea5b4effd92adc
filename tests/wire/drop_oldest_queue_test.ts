import assert from "node:assert/strict";
import { DropOldestQueue } from "../../src/wire/mod.ts";

Deno.test("DropOldestQueue: a full queue drops its oldest item and reports it", async () => {
  const dropped: number[] = [];
  const q = new DropOldestQueue<number>(2, (item) => dropped.push(item));
  for (const n of [1, 2, 3, 4]) assert.equal(q.push(n), true, "push never blocks");
  assert.deepEqual(dropped, [1, 2]);
  assert.equal(await q.next(), 3);
  assert.equal(await q.next(), 4);
});

Deno.test("DropOldestQueue: a waiting consumer gets the next push; close wakes it and returns leftovers", async () => {
  const q = new DropOldestQueue<string>();
  const waiting = q.next();
  q.push("direct");
  assert.equal(await waiting, "direct");
  q.push("left");
  const idle = new DropOldestQueue<string>();
  const pending = idle.next();
  idle.close();
  assert.equal(await pending, undefined);
  assert.deepEqual(q.close(), ["left"]);
  assert.equal(q.closed, true);
  assert.equal(q.push("late"), false);
  assert.equal(await q.next(), undefined);
});
