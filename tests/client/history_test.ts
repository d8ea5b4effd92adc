// "Load older" pages with history(), and a feed that starts at a moment
// in the ledger ({ time }), against a funnel process.
import assert from "node:assert/strict";
import { history, openFeed, post } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { Reader } from "./_feed.ts";
import { startServers } from "./_servers.ts";

Deno.test("history pages back to the first record; a feed starts at a moment", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("older");
  const committed = [];
  for (let n = 0; n < 25; n++) committed.push(await post(track, { n }));
  const pages: unknown[][] = [];
  let before: string | undefined;
  do {
    const page = await history(track, { limit: 10, ...(before ? { before } : {}) });
    pages.push(page.records.map((r) => (r.payload as { n: number }).n));
    before = page.before;
  } while (before !== undefined);
  assert.deepEqual(pages.map((p) => p.length), [10, 10, 5]);
  assert.deepEqual(pages.flat().sort((a, b) => (a as number) - (b as number)), [
    ...Array(25).keys(),
  ]);
  assert.deepEqual(await history(s.track("never-created")), { records: [] });

  // The first record at or after the 18th commit's time (ms resolution: it or an earlier one).
  const ms = Number(committed[17]!.wallclock / 1_000_000n);
  const reader = new Reader(
    openFeed({ track, moq: s.moqt, serverCertificateHashes: s.hashes, from: { time: ms } }),
  );
  try {
    await reader.count(25 - 17);
    const first = reader.records[0]!;
    assert.ok(first.wallclock! >= BigInt(ms) * 1_000_000n, "nothing before the moment");
    assert.ok(first.group <= committed[17]!.group, "the 18th record is in");
    assert.equal(reader.records.at(-1)!.group, committed[24]!.group);
  } finally {
    await reader.close();
  }
});
