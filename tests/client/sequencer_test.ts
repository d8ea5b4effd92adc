// The feed's ordering: records leave by ledger sequence, each once, and a
// missing one is waited for a bounded time before the ledger is asked.
import assert from "node:assert/strict";
import type { Positioned } from "../../src/client/record.ts";
import { Sequencer } from "../../src/client/sequencer.ts";

const rec = (seq: number, epoch = 1): Positioned => ({
  epoch,
  seq,
  record: { group: `e${epoch}-g${seq}`, payload: seq },
});

function drain(s: Sequencer): number[] {
  const out: number[] = [];
  for (let p = s.takeNext(); p; p = s.takeNext()) out.push(p.seq);
  return out;
}

Deno.test("live records arriving out of order leave in order, each once", () => {
  const s = new Sequencer(500, () => 0);
  for (const seq of [2, 0, 1, 1, 4, 3, 0]) s.offer(seq, () => rec(seq));
  assert.deepEqual(drain(s), [0, 1, 2, 3, 4]);
  assert.equal(s.offer(3, () => rec(3)), false, "an old record is refused");
  assert.equal(s.gap(), undefined);
});

Deno.test("a missing record becomes due after the reorder wait, or at once when dropped", () => {
  let now = 1000;
  const s = new Sequencer(500, () => now);
  s.offer(0, () => rec(0));
  s.offer(3, () => rec(3));
  assert.deepEqual(drain(s), [0]);
  const gap = s.gap()!;
  assert.deepEqual([gap.from, gap.to, gap.due, gap.dueAt], [1, 2, false, 1500]);
  assert.equal(s.gap((seq) => seq === 1)!.due, true, "declared dropped: nothing to wait for");
  now = 1499;
  assert.equal(s.gap()!.due, false);
  now = 1500;
  assert.equal(s.gap()!.due, true);
  // The ledger supplies 1 and 2; the held 3 follows.
  assert.equal(s.accept(rec(1)), true);
  assert.equal(s.accept(rec(1)), false, "once");
  assert.equal(s.accept(rec(2)), true);
  assert.deepEqual(drain(s), [3]);
  assert.equal(s.gap(), undefined);
});

Deno.test("records the ledger skips over (never committed) do not stall the feed", () => {
  const s = new Sequencer(500, () => 0);
  s.offer(1, () => rec(1));
  s.offer(4, () => rec(4));
  assert.equal(s.accept(rec(2)), true);
  assert.equal(s.cursor, 2, "1 was held but the ledger went past it");
  assert.equal(s.accept(rec(3)), true);
  assert.deepEqual(drain(s), [4]);
});

Deno.test("a live record that cannot be read is left to the ledger, and held records are bounded", () => {
  const s = new Sequencer(500, () => 0);
  assert.equal(s.offer(1, () => undefined), false);
  assert.deepEqual(s.gap()?.from, 0, "seen, so missing");
  for (let seq = 10; seq < 10 + 5000; seq++) s.offer(seq, () => rec(seq));
  assert.equal(s.held, 4096);
  assert.equal(s.newest, 5009, "what was not held is still known to exist");
});
