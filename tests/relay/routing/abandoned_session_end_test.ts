// A record's group that was still arriving at the relay when its publisher's session ended
// (reset mid-way) is not lost: on a track whose every group is wanted (ordered, as a
// funnel's records), the relay asks for it again and its subscribers get it whole, once.
// Over WebSocket: there a session's end resets its streams (Deno's QUIC cannot reset one).
import assert from "node:assert/strict";
import { LiveFrames, TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { next, PATH, publisher, TRACK, WS } from "./_abandoned.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
Deno.test("relay: a record reset mid-way by its publisher's session ending reaches subscribers whole once the publisher is back", async () => {
  using _q = quiet();
  // The shipped publisher grace: the track waits for its publisher to come back.
  const relay = await startTestRelay({ shippedTimings: true });
  const first = new TrackProducer({ ordered: true, cache: 16 });
  const p1 = await publisher(relay.port, first);
  const sessions = [p1];
  try {
    p1.announce(PATH);
    const s = await dialOurs(relay.port, WS);
    sessions.push(s);
    await seeAnnounced(s, PATH);
    const whole = s.subscribe(PATH, TRACK)[Symbol.asyncIterator]();
    // A subscriber of groups as they arrive shows when the relay holds group 2.
    const partial = s.subscribe(PATH, TRACK, { partial: true })[Symbol.asyncIterator]();
    first.writeGroup(1, enc.encode("r1"));
    assert.equal((await next(whole, "group 1")).sequence, 1);
    assert.equal((await next(partial, "group 1 (partial)")).sequence, 1);

    const g2 = new LiveFrames(0n);
    g2.push(enc.encode("r2"));
    first.writeGroup(2, g2);
    const seen = await next(partial, "group 2 handed over");
    assert.equal(seen.sequence, 2);
    assert.ok(seen.live, "the relay holds group 2 while it arrives");

    // The publisher's session ends with group 2 mid-way; it comes back with the record whole.
    p1.close();
    while (seen.live.state === "open") await seen.live.changed();
    assert.equal(seen.live.state, "reset");
    const second = new TrackProducer({ ordered: true, cache: 16 });
    second.writeGroup(1, enc.encode("r1"));
    second.writeGroup(2, enc.encode("r2"));
    second.writeGroup(3, enc.encode("r3"));
    const p2 = await publisher(relay.port, second);
    sessions.push(p2);
    p2.announce(PATH);

    const got: [number, string][] = [];
    for (let i = 0; i < 2; i++) {
      const g = await next(whole, `group ${i + 2} after the publisher came back`);
      got.push([g.sequence, dec.decode(g.frames[0])]);
    }
    assert.deepEqual(got.sort((a, b) => a[0] - b[0]), [[2, "r2"], [3, "r3"]]);
  } finally {
    for (const s of sessions) s.close();
    await relay.stop();
  }
});
