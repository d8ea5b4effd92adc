// The feed without the HTTP history once it has started: live records
// carry their commit time, and a relay's skip is repaired over MoQ FETCH
// from the ledger (the relay forwards the FETCH to the funnel).
import assert from "node:assert/strict";
import { openFeed, post } from "../../src/client/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, stallableQuicDial } from "./_feed.ts";
import { startServers } from "./_servers.ts";

/** A fetch that answers the first `allowed` requests and fails every later one, counting them. */
function historyGoesAway(allowed: number): { fetch: typeof fetch; refused: () => number } {
  let calls = 0;
  let refused = 0;
  return {
    fetch: (input, init) => {
      if (calls++ < allowed) return fetch(input, init);
      refused++;
      return Promise.reject(new TypeError("history unreachable"));
    },
    refused: () => refused,
  };
}

Deno.test({
  name: "live records carry their exact commit time (frame timestamps in nanoseconds)",
  fn: async () => {
    using _q = quiet();
    await using s = await startServers();
    const track = s.track("wallclock");
    await post(track, { n: 0 });
    // One request to find where "latest" is; after that only MoQ can deliver.
    const http = historyGoesAway(1);
    const reader = new Reader(
      openFeed({ track, moq: s.moqt, serverCertificateHashes: s.hashes, fetch: http.fetch }),
    );
    try {
      await reader.reaches("repairing");
      const committed = [];
      for (let n = 1; n <= 5; n++) committed.push(await post(track, { n }));
      await reader.count(5);
      assert.deepEqual(
        reader.records.map((r) => [r.group, r.wallclock]),
        committed.map((c) => [c.group, c.wallclock]),
      );
    } finally {
      await reader.close();
    }
  },
});

Deno.test({
  name:
    "a feed the relay skips forward repairs over MoQ FETCH when the HTTP history is unreachable",
  fn: async () => {
    using _q = quiet();
    await using s = await startServers({ relay: true });
    const track = s.track("fetch");
    await post(track, { n: 0 });
    const cert = await testCertificate();
    const { dial, hold, release } = stallableQuicDial(cert);
    const http = historyGoesAway(0);
    const reader = new Reader(
      openFeed({ track, moq: s.moqt, from: "start", dial, fetch: http.fetch }),
    );
    try {
      await reader.count(1);
      hold();
      for (let n = 1; n <= 100; n += 10) {
        await Promise.all([...Array(10).keys()].map((k) => post(track, { n: n + k })));
      }
      await new Promise((r) => setTimeout(r, 300));
      release();
      const ledger = await ledgerEntries(track);
      await reader.has(ledger.at(-1)!.group);
      assertSameGroups(reader.records, ledger.map((e) => e.group));
      assert.ok(http.refused() > 0, "the feed did try the history, and got nothing from it");
    } finally {
      release();
      await reader.close();
    }
  },
});
