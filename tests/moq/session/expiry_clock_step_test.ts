/**
 * Group-stream expiry across a step of the wall clock. Groups are aged on `Date.now` (their
 * `writtenAt`), so a group written before a step back looks young until the clock catches up;
 * but one written after the step must still expire on time. The process-wide expiry deadlines
 * are the only place a step could hold up every subscription that had one pending.
 *
 * The wall clock is the one thing here that cannot be injected (the relay's sessions take no
 * timers), so this file moves `Date.now` before it loads the session code, and imports it after.
 */
import assert from "node:assert/strict";
import { within } from "../../support/wait.ts";

const realNow = Date.now.bind(Date);
let offset = 0;
Date.now = () => realNow() + offset;
const { accept, connect, LiveFrames, TrackProducer } = await import("../../../src/moq/mod.ts");
const { quicPair } = await import("../../support/quic_pair.ts");

Deno.test("shared expiry: a group written after the wall clock stepped back an hour still expires", async () => {
  const producer = new TrackProducer();
  const quic = await quicPair("moq-lite-05");
  const publisherP = accept(quic.server, { serve: () => producer, log: () => {} });
  const subscriber = await connect(quic.client, { log: () => {} });
  const publisher = await publisherP;
  const stalled = () => {
    const live = new LiveFrames(0n);
    live.push(new Uint8Array(1));
    return live;
  };
  try {
    const it = subscriber.subscribe("feed", "t", { maxLatency: 300, partial: true })[
      Symbol.asyncIterator
    ]();
    // A stalled group, then a newer one: its deadline is pending when the clock steps.
    producer.writeGroup(1, stalled());
    assert.equal((await it.next()).value?.sequence, 1);
    producer.writeGroup(2, new Uint8Array(1));
    assert.equal((await it.next()).value?.sequence, 2);
    offset = -3_600_000;
    producer.writeGroup(3, stalled());
    const three = (await it.next()).value!;
    assert.equal(three.sequence, 3);
    producer.writeGroup(4, new Uint8Array(1));
    assert.equal((await it.next()).value?.sequence, 4);
    // Group 3 is 300 ms old on the stepped clock a third of a second from now; not an hour.
    const live = three.live!;
    await within(
      (async () => {
        while (live.state === "open") await live.changed();
      })(),
      20_000,
      "group 3's stream to be reset (it outlived its max latency)",
    );
    assert.ok(publisher.stats.groupsExpired >= 1);
  } finally {
    offset = 0;
    subscriber.close();
    publisher.close();
    await quic.stop();
  }
});
