// A priority change reorders the streams already open: two tracks, one long
// group each (written frame by frame), share a link of 1.2 Mbit/s that carries
// less than either, the subscriber's "a" above "b". Once the subscriber lowers
// "a" below "b" (SUBSCRIBE_UPDATE), b's group, whose stream was open all along,
// takes the link at once, without waiting for a next group, and a's gives way.
// For our subscriber and @moq/net's.
//
// Lowering, not raising: Deno's QUIC (quinn) applies a new order to a stream
// the next time it schedules the stream, which for one waiting behind others
// is only once they are done; a lowered stream is the one being sent, so it
// moves at once (docs/relay.md, "Priorities and expiry").
import assert from "node:assert/strict";
import { sleep } from "../../../src/timers/mod.ts";
import { wallMs } from "../../../bench/media/frames.ts";
import { net, ours, overSlowLink, type SubscriberKind, type TrackPlan } from "../_media_link.ts";

// 10 kB frames 20 times a second each (1.7 Mbit/s), in one group for the whole test.
const TRACKS: readonly TrackPlan[] = [
  { name: "a", frame: 10_417, everyMs: 50, gop: 100_000 },
  { name: "b", frame: 10_417, everyMs: 50, gop: 100_000 },
];
const PHASE_MS = 3000;
// What the link still had queued under the old priorities drains in this long.
const SETTLE_MS = 500;

async function loweringReorders(kind: SubscriberKind): Promise<void> {
  await overSlowLink(TRACKS, kind, { a: 200, b: 100 }, async ({ frames, subscriber, proxy }) => {
    const a = frames.get("a")!;
    const b = frames.get("b")!;
    const t0 = wallMs() + SETTLE_MS;
    await sleep(SETTLE_MS + PHASE_MS);
    const t1 = wallMs();
    await subscriber.update("a", 10);
    await sleep(SETTLE_MS + PHASE_MS);
    const t2 = wallMs();
    const before = { a: a.readIn(t0, t1), b: b.readIn(t0, t1) };
    const after = { a: a.readIn(t1 + SETTLE_MS, t2), b: b.readIn(t1 + SETTLE_MS, t2) };
    console.log(
      `frames read in ${PHASE_MS} ms with a at 200, b at 100: a ${before.a}, b ${before.b}; ` +
        `after a went to 10: a ${after.a}, b ${after.b}; link ${
          JSON.stringify(proxy.counts.toClient)
        }`,
    );
    assert.ok(before.a > 3 * before.b + 5, "a goes first at first");
    assert.ok(after.b > 3 * after.a + 5, "b's open group takes the link once a is lowered");
  }, ["a"]);
}

Deno.test("relay → 1.2 Mbit/s link → our subscriber: lowering a priority reorders its open group streams", () =>
  loweringReorders(ours));

Deno.test("relay → 1.2 Mbit/s link → @moq/net: lowering a priority reorders its open group streams", () =>
  loweringReorders(net));
