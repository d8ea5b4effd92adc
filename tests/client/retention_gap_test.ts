// A feed resuming from a position retention removed is told so: a `gap` event with
// `recovered: false` naming exactly the records lost, then the records kept and the
// live ones, against a real funnel process that runs retention by itself.
import assert from "node:assert/strict";
import { type FeedGapEvent, openFeed, post } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { until } from "../support/wait.ts";
import { Reader } from "./_feed.ts";
import { startServers } from "./_servers.ts";

const g = (seq: number) => `e000001-g${String(seq).padStart(8, "0")}`;

Deno.test("a feed resuming from a removed position reports the gap, recovered false", async () => {
  using _q = quiet();
  await using s = await startServers({
    // A memory ledger keeping 5 records per track, with a pass every second (the default
    // interval is a minute; a file ledger removes whole 1 MiB segments only).
    funnelEnv: { LEDGER_URI: "", LEDGER_RETENTION: "count=5", LEDGER_RETENTION_INTERVAL: "1" },
  });
  const track = s.track("kept");
  for (let n = 0; n < 20; n++) await post(track, { n });
  await until(async () => {
    const reply = await fetch(`${track}?after=${g(0)}`);
    await reply.body?.cancel();
    return reply.status === 410;
  }, "retention to remove the old records");

  const feed = openFeed({
    track,
    moq: s.moqt,
    serverCertificateHashes: s.hashes,
    from: { after: g(2) },
  });
  const gaps: FeedGapEvent[] = [];
  feed.addEventListener("gap", (e) => gaps.push(e as FeedGapEvent));
  const reader = new Reader(feed);
  try {
    await reader.count(5);
    assert.equal(gaps.length, 1, "one gap, said once");
    assert.equal(gaps[0]!.recovered, false);
    assert.equal(gaps[0]!.from, g(3));
    assert.equal(gaps[0]!.to, g(14));
    assert.deepEqual(reader.records.map((r) => r.group), [15, 16, 17, 18, 19].map(g));
    // And live records follow without another gap.
    await post(track, { n: 20 });
    await reader.has(g(20));
    assert.equal(gaps.length, 1);
  } finally {
    await reader.close();
  }
});
