/**
 * One publisher's open group must not stop a subscriber's other tracks.
 *
 * The session send bound (SessionSends, 64 MiB) counted a stream's bytes
 * until the stream ended, however much of them its subscriber had read. A
 * publisher that writes a large group and never finishes it (allowed: a group
 * is open until its publisher ends it, and the receive budget resets a
 * stalled group only while other groups of the same publisher wait for room)
 * kept that count in every subscriber session that subscribed to its track.
 * Past the bound, every other group of those sessions waited for room that
 * never came. Here a subscriber that read every byte of publisher A's open
 * 62 MiB group got publisher B's next 4 MiB group of another track only once
 * the bound counted what the transport has not taken yet (moq-lite): before,
 * it never did (with a 32 MiB open group it did).
 */
import assert from "node:assert/strict";
import { LiveFrames, type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { startTestRelay } from "../../support/test_relay.ts";

const MiB = 1 << 20;
const FRAME = 31 * MiB; // under the 32 MiB frame limit; two make a group under 64 MiB

Deno.test({
  name:
    "relay: a subscriber that read all of one publisher's open group still gets another publisher's groups",
  fn: async () => {
    using _q = quiet();
    const relay = await startTestRelay();
    const sessions: MoqSession[] = [];
    const big = new TrackProducer({ cache: 4, cacheBytes: 256 * MiB });
    const other = new TrackProducer({ cache: 4, cacheBytes: 256 * MiB });
    const open = new LiveFrames(0n);
    try {
      const a = await dialOurs(relay.port, {
        moq: { serve: (r) => (r.path === "a" && r.track === "big" ? big : "not_found") },
      });
      const b = await dialOurs(relay.port, {
        moq: { serve: (r) => (r.path === "b" && r.track === "t" ? other : "not_found") },
      });
      sessions.push(a, b);
      a.announce("a");
      b.announce("b");
      const s = await dialOurs(relay.port);
      sessions.push(s);
      await seeAnnounced(s, "a");
      await seeAnnounced(s, "b");

      const bigIt = s.subscribe("a", "big", { partial: true })[Symbol.asyncIterator]();
      const otherIt = s.subscribe("b", "t")[Symbol.asyncIterator]();
      // The other track works to begin with.
      other.writeGroup(0, new Uint8Array(1024));
      const first = await within(otherIt.next(), 20_000, "the other track's first group");
      assert.ok(!first.done && first.value.sequence === 0);

      // Publisher A: one group of two 31 MiB frames, never finished.
      open.push(new Uint8Array(FRAME));
      big.writeGroup(0, open);
      const got = await within(bigIt.next(), 20_000, "the open group");
      assert.ok(!got.done && got.value.live, "the open group arrives while still open");
      open.push(new Uint8Array(FRAME));
      const live = got.value.live;
      await until(
        () => got.value.frames.length === 2 || live.state !== "open",
        "the subscriber has read both frames of the open group",
      );
      assert.equal(got.value.frames.length, 2);

      // Publisher B's next group: the subscriber has read everything it was sent.
      other.writeGroup(1, new Uint8Array(4 * MiB));
      const next = await within(otherIt.next(), 20_000, "the other track's next group");
      assert.ok(!next.done && next.value.sequence === 1);
    } finally {
      open.finish();
      for (const x of sessions) x.close();
      await relay.stop();
    }
  },
});
