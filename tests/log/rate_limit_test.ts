import assert from "node:assert/strict";
import { rateLimitedLog } from "../../src/log/mod.ts";

Deno.test("peer log lines: a burst passes, then a steady rate, and the next line counts the dropped", () => {
  let t = 0;
  const lines: string[] = [];
  const log = rateLimitedLog((l) => lines.push(l), { burst: 3, perSecond: 2, now: () => t });
  for (let i = 0; i < 100; i++) log(`hostile ${i}`);
  assert.deepEqual(lines, ["hostile 0", "hostile 1", "hostile 2"]);
  assert.equal(log.suppressed, 97);
  t += 500; // one token back
  log("later");
  assert.equal(lines.at(-1), "later (97 similar lines suppressed before this one)");
  log("dropped again");
  assert.equal(lines.length, 4);
  t += 60_000; // refills to the burst, not beyond
  for (let i = 0; i < 10; i++) log(`wave ${i}`);
  assert.equal(lines.length, 7);
  assert.equal(log.suppressed, 98 + 7);
});
