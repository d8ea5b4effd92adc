/**
 * Group-stream expiry on the deadlines every session of the process shares (what a relay
 * uses: its sessions inject no timers), at shipped defaults over real QUIC: a stream that
 * outlives the max latency is reset, an idle subscription holds no deadline, a deadline
 * cancelled when its stream ends never fires, deadlines of many subscriptions fire in the
 * order they are due, and a session that ends leaves none behind.
 */
import assert from "node:assert/strict";
import {
  accept,
  connect,
  LiveFrames,
  type MoqSession,
  type ReceivedGroup,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { pendingStreamExpiries } from "../../../src/moq/session/core.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until } from "../../support/wait.ts";

async function pair(tracks: Map<string, TrackProducer>) {
  const quic = await quicPair("moq-lite-05");
  // No timers given: the shared deadlines, as on a relay.
  const publisherP = accept(quic.server, {
    serve: (r) => tracks.get(r.track) ?? "not_found",
    log: () => {},
  });
  const subscriber: MoqSession = await connect(quic.client, { log: () => {} });
  const publisher = await publisherP;
  return {
    publisher,
    subscriber,
    stop: async () => {
      subscriber.close();
      publisher.close();
      await quic.stop();
    },
  };
}

async function next(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await it.next();
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}

async function ended(live: LiveFrames): Promise<void> {
  while (live.state === "open") await live.changed();
}

function stalled(): LiveFrames {
  const live = new LiveFrames(0n);
  live.push(new Uint8Array(1));
  return live;
}

Deno.test("shared expiry at the track's default max latency: reset when outlived, none held idle, none after the session", async () => {
  const producer = new TrackProducer(); // max latency 5000 ms, the default
  const p = await pair(new Map([["t", producer]]));
  const before = pendingStreamExpiries();
  try {
    const it = p.subscriber.subscribe("feed", "t", { partial: true })[Symbol.asyncIterator]();
    producer.writeGroup(1, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 1);
    // Told once the stream ended, in the same turn as its deadline goes.
    await until(() => p.publisher.stats.groupsSent === 1, "the group's stream to end");
    assert.equal(pendingStreamExpiries(), before, "an idle subscription holds a deadline");

    // A stream open for frames still to come holds one deadline; its end cancels it.
    const open = stalled();
    producer.writeGroup(2, open);
    const two = await next(it);
    assert.equal(pendingStreamExpiries(), before + 1);
    open.finish();
    await ended(two.live!);
    await until(() => p.publisher.stats.groupsSent === 2, "the live group's stream to end");
    assert.equal(pendingStreamExpiries(), before, "the ended stream's deadline stays");

    // Stalled and no longer the latest: reset once it is older than 5 s.
    producer.writeGroup(3, stalled());
    const three = await next(it);
    producer.writeGroup(4, new Uint8Array(1));
    assert.equal((await next(it)).sequence, 4);
    await ended(three.live!);
    assert.equal(p.publisher.stats.groupsExpired, 1, "the cancelled deadline never fired");
    await until(() => pendingStreamExpiries() === before, "the expired stream's deadline to go");

    // The latest group stalls: its deadline keeps coming back while the stream is open...
    producer.writeGroup(5, stalled());
    assert.equal((await next(it)).sequence, 5);
    assert.equal(pendingStreamExpiries(), before + 1);
  } finally {
    await p.stop();
  }
  // ...and the session's end takes it away (the test's timer sanitizer would see one left).
  await until(() => p.publisher.stats.subscriptionsClosed === 1, "the subscription to close");
  assert.equal(pendingStreamExpiries(), before, "the closed session left a deadline");
  assert.equal(p.publisher.stats.groupsExpired, 1);
});

Deno.test("shared expiry: subscriptions' deadlines fire in the order they are due, not the order set", async () => {
  const latencies = [900, 600, 300]; // set first, due last
  const tracks = new Map(latencies.map((ms) => [`t${ms}`, new TrackProducer()]));
  const p = await pair(tracks);
  try {
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (const ms of latencies) {
      const it = p.subscriber.subscribe("feed", `t${ms}`, { maxLatency: ms, partial: true })[
        Symbol.asyncIterator
      ]();
      const producer = tracks.get(`t${ms}`)!;
      producer.writeGroup(1, stalled());
      const one = await next(it);
      producer.writeGroup(2, new Uint8Array(1));
      assert.equal((await next(it)).sequence, 2);
      waits.push(ended(one.live!).then(() => void order.push(ms)));
    }
    await Promise.all(waits);
    assert.deepEqual(order, [300, 600, 900]);
    assert.equal(p.publisher.stats.groupsExpired, 3);
  } finally {
    await p.stop();
  }
  await until(() => pendingStreamExpiries() === 0, "every deadline to go");
});
