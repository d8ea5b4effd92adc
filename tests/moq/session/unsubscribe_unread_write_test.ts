/**
 * A subscriber that leaves while the streams of its subscriptions each hold a
 * write it never read (it stopped reading, then unsubscribed): the served
 * subscriptions should end, releasing their cursors (on a relay, what keeps
 * the upstream track) and the session's send bound. They do not (likely, not
 * confirmed: a stream's reset waits for the write in flight, which the
 * transport never takes): all 8 subscriptions stayed served (and 8 MiB counted in the
 * session's sends) for the 60 s the test waits. The same held before the
 * session bound counted pending writes (it is not that change's).
 */
import assert from "node:assert/strict";
import { accept, LiveFrames, TrackProducer } from "../../../src/moq/mod.ts";
import { SESSION_BYTES_IN_FLIGHT } from "../../../src/moq/session/mod.ts";
import { subscribeRaw } from "./_never_read.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until, within } from "../../support/wait.ts";

const MiB = 1 << 20;
const SUBSCRIPTIONS = 8;
const GROUPS = 8;

Deno.test({
  name:
    "moq-lite-04: unsubscribing while every stream holds an unread write ends the subscriptions",
  // A known hole (docs/security.md); likely cause, not confirmed: a writer's abort waits for the
  // write in flight (as the streams standard says), which the transport never takes.
  ignore: true,
  fn: async () => {
    const track = new TrackProducer({ cache: 32, cacheBytes: 1 << 30, maxLatency: 0 });
    const groups: LiveFrames[] = [];
    for (let i = 0; i < GROUPS; i++) {
      const live = new LiveFrames(0n);
      live.push(new Uint8Array(1024));
      track.writeGroup(i, live);
      groups.push(live);
    }
    const pair = await quicPair("moq-lite-04");
    const server = await accept(pair.server, { log: () => {}, serve: () => track });
    try {
      const requests = await subscribeRaw(pair.client, SUBSCRIPTIONS, track);
      // The groups grow in 1 MiB frames the subscriber never reads: every stream has a write
      // pending, and together they reach the session's bound.
      for (let f = 0; f < 4; f++) {
        for (const live of groups) live.push(new Uint8Array(MiB));
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      await until(
        () => server.sendBytesInFlight > SESSION_BYTES_IN_FLIGHT - MiB,
        "the session's bound reached",
      );
      for (const w of requests) await w.close();
      await within(
        until(() => track.subscribers === 0, "every subscription ended"),
        60_000,
        "every subscription ended",
      );
      assert.equal(server.sendBytesInFlight, 0, "the session's sends given back");
    } finally {
      for (const live of groups) live.finish();
      server.close();
      await pair.stop();
    }
  },
});
