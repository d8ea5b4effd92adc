// The forward history page body: its `after` cursor comes from the entry read past the page,
// and a page that storage ends short of what this funnel knows committed fails instead of
// telling the reader the track ends there.
import assert from "node:assert/strict";
import { newerPageBody } from "../../src/funnel/history.ts";
import { type LedgerEntry, LedgerError } from "../../src/ledger/mod.ts";

const entries = (from: number, to: number): LedgerEntry[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    epoch: 1,
    seq: from + i,
    wallclock: 1n,
    payload: "{}",
  }));

const page = async (body: AsyncIterable<string>) =>
  JSON.parse((await Array.fromAsync(body)).join("")) as {
    records: { group: string }[];
    after?: string;
  };

Deno.test("a forward page has an after cursor when storage holds an entry past it, whatever the funnel remembers", async () => {
  // The funnel remembers newest seq 2 (another process committed more).
  const full = await page(newerPageBody(entries(0, 3), 3, -1, 2));
  assert.equal(full.records.length, 3);
  assert.equal(full.after, "e000001-g00000002");
  const last = await page(newerPageBody(entries(0, 2), 3, -1, 2));
  assert.equal(last.records.length, 3);
  assert.equal(last.after, undefined);
});

Deno.test("a forward page that storage ends short of a committed record is an error", async () => {
  await assert.rejects(
    () => page(newerPageBody(entries(0, 1), 3, -1, 5)),
    (e) => e instanceof LedgerError && e.code === "unavailable",
  );
  await assert.rejects(
    () => page(newerPageBody([], 3, 4, 5)),
    (e) => e instanceof LedgerError && e.code === "unavailable",
  );
  // A cursor at or past the newest record is simply the end.
  assert.deepEqual(await page(newerPageBody([], 3, 5, 5)), { records: [] });
});
