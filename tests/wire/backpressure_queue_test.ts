import assert from "node:assert/strict";
import { BackpressureQueue } from "../../src/wire/mod.ts";

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("BackpressureQueue: push waits at the high-water mark until the consumer takes", async () => {
  const q = new BackpressureQueue<number>(2);
  await q.push(1);
  let released = false;
  const second = q.push(2).then(() => released = true);
  await tick();
  assert.equal(released, false, "the producer is paced by the consumer");
  assert.equal(q.size, 2);
  assert.equal(await q.next(), 1);
  await second;
  assert.equal(released, true);
  assert.equal(q.shift(), 2, "the owner may drop the oldest item");
  assert.equal(q.size, 0);
});

Deno.test("BackpressureQueue: the consumer drains, then sees the end or its error", async () => {
  const q = new BackpressureQueue<string>();
  const seen: string[] = [];
  const consumer = (async () => {
    for await (const item of q) seen.push(item);
  })();
  await q.push("a");
  await q.push("b");
  q.end();
  await consumer;
  assert.deepEqual(seen, ["a", "b"]);
  assert.equal(q.ended, true);
  await q.push("late");
  assert.equal(q.size, 0, "pushes after the end are ignored");

  const failing = new BackpressureQueue<string>();
  await failing.push("x");
  failing.end(new RangeError("boom"));
  assert.equal(await failing.next(), "x");
  await assert.rejects(failing.next(), RangeError);
});

Deno.test("BackpressureQueue: a consumer that stops early runs the return hook once and frees producers", async () => {
  let returned = 0;
  const q = new BackpressureQueue<number>(1, () => returned++);
  const blocked = q.push(1);
  for await (const _ of q) break;
  await blocked;
  assert.equal(returned, 1);
  assert.equal(q.ended, true);
});
