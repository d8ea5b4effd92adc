// A media track's publisher abandons groups on purpose (past its max latency) and has nothing more
// of them: the relay does not FETCH each back five times, nor count each lost (it did: 25 FETCHes and
// 5 skips for 5 groups).
import assert from "node:assert/strict";
import { RELAY_DEFAULTS } from "../../../src/config/mod.ts";
import { LiveFrames } from "../../../src/moq/mod.ts";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { TrackDistributor } from "../../../src/relay/routing/distributor.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { FakeSource, group, settle } from "./_fake_source.ts";

Deno.test("a media track's groups abandoned by their publisher are not fetched back nor counted lost", async () => {
  const clock = new ManualClock();
  const metrics = createRelayMetrics();
  const fetched: number[] = [];
  const d = new TrackDistributor({
    path: "b",
    track: "video",
    cacheSize: RELAY_DEFAULTS.GROUP_CACHE_SIZE, // the relay's default ring
    metrics,
    now: clock.now,
    repairTimers: clock,
    timers: clock,
    idleMs: 60_000,
    // The publisher has nothing more of a group it dropped.
    fetchMissing: (sequence) => {
      fetched.push(sequence);
      return Promise.resolve(undefined);
    },
  });
  const src = new FakeSource();
  d.start(await src.subscribe("video"), src);
  const sub = d.producer.cursor(undefined, 8);
  for (let s = 0; s < 10; s++) {
    if (s % 2 === 0) {
      src.last.push(group(s));
      continue;
    }
    // Every other group is dropped part-way: its stream reset after its first frame.
    const live = new LiveFrames(0n);
    live.push(new Uint8Array([s]));
    src.last.push({ sequence: s, frames: [new Uint8Array([s])], live });
    await settle();
    live.reset();
  }
  for (let i = 0; i < 20; i++) {
    await settle();
    if (clock.pending.length > 0) clock.fireNext();
  }
  await settle();
  console.log(
    "FETCHES",
    fetched.length,
    JSON.stringify(fetched),
    "skips",
    metrics.subscriberSkipsTotal.value(),
  );
  assert.deepEqual(fetched, [], "no FETCH of a media group its publisher abandoned");
  assert.equal(metrics.subscriberSkipsTotal.value(), 0, "nothing counted lost");
  sub.close();
  d.close();
});
