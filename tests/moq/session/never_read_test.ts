/**
 * A moq-lite subscriber that opens many subscriptions and never reads a
 * group stream: the serving session holds at most its bytes in flight
 * across them (`SESSION_BYTES_IN_FLIGHT`), not 8 MiB for each. Before, 32
 * such subscriptions to one track pinned about 200 MiB, and a connection
 * may hold 100.
 */
import assert from "node:assert/strict";
import { accept, TrackProducer } from "../../../src/moq/mod.ts";
import { SESSION_BYTES_IN_FLIGHT } from "../../../src/moq/session/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { subscribeRaw } from "./_never_read.ts";

const MiB = 1 << 20;
const SUBSCRIPTIONS = 48;
const GROUP = 4 * MiB;
// A group being sent is held twice (its stream's bytes, and the transport's copy of them).
const SESSION_BOUND = 2 * SESSION_BYTES_IN_FLIGHT + 2 * GROUP;

Deno.test("moq-lite-04: a subscriber that never reads 48 subscriptions to one track pins at most a session's bound", async () => {
  const track = new TrackProducer({ cache: 32, cacheBytes: 1 << 30, maxLatency: 0 });
  for (let i = 0; i < 16; i++) track.writeGroup(i, new Uint8Array(GROUP));
  const pair = await quicPair("moq-lite-04");
  const server = await accept(pair.server, { log: () => {}, serve: () => track });
  try {
    const before = Deno.memoryUsage().external;
    await subscribeRaw(pair.client, SUBSCRIPTIONS, track);
    // Every subscription has started what it may (the writes it starts are immediate).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const held = Deno.memoryUsage().external - before;
    assert.ok(
      held <= SESSION_BOUND,
      `the session holds ${(held / MiB).toFixed(0)} MiB for a subscriber that reads nothing`,
    );
  } finally {
    server.close();
    await pair.stop();
  }
});
