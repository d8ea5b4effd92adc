/**
 * Interop with @moq/lite 0.2.2 (lite-04 only) over native QUIC, both
 * dialing directions, publishing, subscribing and announcing both ways.
 */
import assert from "node:assert/strict";
import * as Lite from "@moq/lite";
import { quiet } from "../../support/quiet.ts";
import { theyServeUs, weServeThem } from "../../support/lite_feed.ts";
import { ourFeedServer, theirFeedServer } from "../../support/quic_pair.ts";
import { DeliveryTurns } from "../../../src/moq/mod.ts";

const GROUPS = 1000;
const VERSION = "moq-lite-04";
Deno.test("@moq/lite moq-lite-04: their client ⇄ our server", async () => {
  using _ = quiet();
  const server = await ourFeedServer(VERSION);
  const theirs = await Lite.Connection.connect(server.url, {
    transport: server.quic as unknown as WebTransport,
  });
  const ours = await server.ours;
  assert.equal(theirs.version, VERSION);
  await weServeThem(ours, server.producer, theirs, GROUPS);
  await theyServeUs(ours, theirs, GROUPS);
  theirs.close();
  await ours.closed;
  server.stop();
});

Deno.test("@moq/lite moq-lite-04: their client gets every group from our server with delivery turns on", async () => {
  using _ = quiet();
  // Turns pause only a process that cannot keep up; one that keeps up loses nothing to them.
  const server = await ourFeedServer(VERSION, { deliveryTurns: new DeliveryTurns() });
  const theirs = await Lite.Connection.connect(server.url, {
    transport: server.quic as unknown as WebTransport,
  });
  const ours = await server.ours;
  // lite-04 has no SUBSCRIBE_DROP: a group skipped during a pause would never arrive.
  // "Keeps up" is what is tested: the writer stays within the server's 8-group cache of what
  // their client has read. Unpaced, a host too loaded to keep up (load average 10+, the full
  // suite) had the subscriber fall past the cache, a skip the spec requires, not a turn's loss.
  await weServeThem(ours, server.producer, theirs, GROUPS, 8);
  theirs.close();
  await ours.closed;
  server.stop();
});

Deno.test("@moq/lite moq-lite-04: our client ⇄ their server", async () => {
  using _ = quiet();
  const { producer, ours, theirs, stop } = await theirFeedServer(
    VERSION,
    (conn, url) => Lite.Connection.accept(conn as unknown as WebTransport, url),
  );
  assert.equal(theirs.version, VERSION);
  await weServeThem(ours, producer, theirs, GROUPS);
  await theyServeUs(ours, theirs, GROUPS);
  ours.close(0, "done");
  await theirs.closed.catch(() => {});
  stop();
});
