// Redactions over MoQ: the funnel's listener serves a redacted record as
// `{"redacted":true}` once the redaction is committed (a subscriber that
// starts inside its cache, and FETCH), and a feed whose HTTP history is
// unreachable repairs a gap holding a redacted record over FETCH (from the
// listener's cache or its ledger). A relay's own cache is not covered here.
import assert from "node:assert/strict";
import { openFeed, post, redact } from "../../src/client/mod.ts";
import { parseGroupId } from "../../src/record/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, stallableQuicDial } from "./_feed.ts";
import { startServers } from "./_servers.ts";

const text = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes);

Deno.test("the funnel's listener never serves a payload once its redaction is committed", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("cache");
  const a = await post(track, { secret: 1 });
  await post(track, { n: 2 });
  await redact(track, a.group);
  const moq = await dialOurs(Number(new URL(s.moqt).port));
  try {
    const sequence = parseGroupId(a.group).seq + 1;
    const sub = moq.subscribe("room/1", "cache", { start: sequence });
    const it = sub[Symbol.asyncIterator]();
    const first = (await it.next()).value!;
    assert.equal(first.sequence, sequence);
    assert.equal(text(first.frames[0]), `{"redacted":true}`);
    sub.close();
    const fetched = await moq.fetch("room/1", "cache", sequence);
    assert.equal(text(fetched.frames[0]), `{"redacted":true}`);
  } finally {
    moq.close(0, "done");
  }
});

Deno.test("a gap holding a redacted record is repaired over MoQ FETCH with the history unreachable", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("redacted-gap");
  await post(track, { n: 0 });
  const cert = await testCertificate();
  const { dial, hold, release } = stallableQuicDial(cert);
  let refused = 0;
  const noHistory: typeof fetch = () => (refused++, Promise.reject(new TypeError("unreachable")));
  const reader = new Reader(
    openFeed({ track, moq: s.moqt, from: "start", dial, fetch: noHistory }),
  );
  try {
    await reader.count(1);
    hold();
    const posted: { group: string }[] = [];
    for (let n = 1; n <= 60; n += 10) {
      posted.push(
        ...await Promise.all([...Array(10).keys()].map((k) => post(track, { n: n + k }))),
      );
    }
    await redact(track, posted[5]!.group);
    await new Promise((r) => setTimeout(r, 300));
    release();
    const ledger = await ledgerEntries(track);
    await reader.has(ledger.at(-1)!.group);
    assertSameGroups(reader.records, ledger.map((e) => e.group));
    const record = reader.records.find((r) => r.group === posted[5]!.group)!;
    assert.deepEqual(record, {
      group: posted[5]!.group,
      redacted: true,
      wallclock: record.wallclock,
    });
    assert.ok(reader.records.some((r) => r.redacts === posted[5]!.group));
    assert.ok(refused > 0, "the feed did try the history, and got nothing from it");
    console.log(`records fetched without HTTP: ${reader.records.length}`);
  } finally {
    release();
    await reader.close();
  }
});
