// The feed against a real funnel process (file: ledger, its own MoQ
// listener): where it starts, the handover from history to live while
// records keep coming, and redactions.
import assert from "node:assert/strict";
import { type FeedOptions, openFeed, post, redact } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, Sender } from "./_feed.ts";
import { type Servers, startServers } from "./_servers.ts";

/** Posts `{ n }` for n in `from..to-1`, one after another; resolves their groups. */
async function postMany(track: string, from: number, to: number): Promise<string[]> {
  const groups: string[] = [];
  for (let n = from; n < to; n++) groups.push((await post(track, { n })).group);
  return groups;
}

function feed(s: Servers, track: string, options: Partial<FeedOptions> = {}): Reader {
  return new Reader(
    openFeed({ track, moq: s.moqt, serverCertificateHashes: s.hashes, ...options }),
  );
}

const payloads = (r: Reader) => r.records.map((x) => (x.payload as { n: number }).n);

Deno.test("client feed against a funnel process", async (t) => {
  using _q = quiet();
  await using s = await startServers();

  await t.step(
    "from start: history hands over to live while records keep being posted",
    async () => {
      const track = s.track("handover");
      await postMany(track, 0, 450);
      const sender = new Sender(track, { gapMs: 2 });
      const reader = feed(s, track, { from: "start" });
      try {
        await reader.reaches("live");
        await sender.more(50);
        await sender.stop();
        const ledger = await ledgerEntries(track);
        await reader.has(ledger.at(-1)!.group);
        assertSameGroups(reader.records, ledger.map((e) => e.group));
        // History records carry their commit time; group ids and times rise together.
        const first = reader.records[0]!;
        assert.equal(typeof first.wallclock, "bigint");
        assert.ok(reader.records[449]!.wallclock! > first.wallclock!);
      } finally {
        await sender.stop();
        await reader.close();
      }
    },
  );

  await t.step(
    "over QMux on WebSocket (wss://), the same handover, every record once",
    async () => {
      const track = s.track("websocket");
      await postMany(track, 0, 250);
      const sender = new Sender(track, { gapMs: 2 });
      const reader = feed(s, track, { from: "start", moq: s.wss, caCerts: [s.certPem] });
      try {
        await reader.reaches("live");
        assert.equal(reader.feed.transport, "websocket");
        await sender.more(50);
        await sender.stop();
        const ledger = await ledgerEntries(track);
        await reader.has(ledger.at(-1)!.group);
        assertSameGroups(reader.records, ledger.map((e) => e.group));
      } finally {
        await sender.stop();
        await reader.close();
      }
    },
  );

  await t.step("{ last: n } starts with the newest n records, then everything new", async () => {
    const track = s.track("last");
    await postMany(track, 0, 30);
    const reader = feed(s, track, { from: { last: 10 } });
    try {
      await reader.count(10);
      assert.deepEqual(payloads(reader), [20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
      await reader.reaches("live");
      await postMany(track, 30, 35);
      await reader.count(15);
      assert.deepEqual(payloads(reader).slice(10), [30, 31, 32, 33, 34]);
    } finally {
      await reader.close();
    }
    // More than one page back: the whole track.
    const long = feed(s, track, { from: { last: 500 } });
    try {
      await long.count(35);
      assert.deepEqual(payloads(long), [...Array(35).keys()]);
    } finally {
      await long.close();
    }
  });

  await t.step(
    "{ after: group } starts right after that group; latest only with what comes next",
    async () => {
      const track = s.track("after");
      const groups = await postMany(track, 0, 20);
      const after = feed(s, track, { from: { after: groups[11]! } });
      const latest = feed(s, track);
      try {
        await after.count(8);
        assert.deepEqual(payloads(after), [12, 13, 14, 15, 16, 17, 18, 19]);
        await latest.reaches("live");
        await postMany(track, 20, 23);
        await after.count(11);
        await latest.count(3);
        assert.deepEqual(payloads(latest), [20, 21, 22]);
        assert.deepEqual(payloads(after).slice(8), [20, 21, 22]);
        assert.equal(after.feed.position, latest.records[2]!.group);
      } finally {
        await after.close();
        await latest.close();
      }
    },
  );

  await t.step(
    "a redaction reaches live feeds; a feed opened later sees the record redacted",
    async () => {
      const track = s.track("redact");
      const live = feed(s, track, { from: "start" });
      try {
        const a = await post(track, { n: 0 });
        const b = await post(track, { n: 1 });
        await live.count(2);
        const redaction = await redact(track, a.group);
        assert.ok(redaction);
        assert.equal(await redact(track, a.group), undefined, "a repeat changes nothing");
        await live.count(3);
        assert.deepEqual(live.records[2], {
          group: redaction.group,
          redacts: a.group,
          ...(live.records[2]!.wallclock === undefined ? {} : { wallclock: redaction.wallclock }),
        });
        const later = feed(s, track, { from: "start" });
        try {
          await later.count(3);
          assert.deepEqual(later.records.map((r) => [r.group, r.redacted, r.payload, r.redacts]), [
            [a.group, true, undefined, undefined],
            [b.group, undefined, { n: 1 }, undefined],
            [redaction.group, undefined, undefined, a.group],
          ]);
          assert.equal(later.records[2]!.wallclock, redaction.wallclock);
        } finally {
          await later.close();
        }
      } finally {
        await live.close();
      }
    },
  );
});
