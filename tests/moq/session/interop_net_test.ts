/**
 * Interop with independent peers over native QUIC: @moq/net 0.3.x speaks
 * lite-05 and lite-04. Both directions of dialing, publishing, subscribing
 * and announcing.
 */
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { quiet } from "../../support/quiet.ts";
import { theyServeUs, weServeThem } from "../../support/net_feed.ts";
import { ourFeedServer, theirFeedServer } from "../../support/quic_pair.ts";

const GROUPS = 1000;

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`@moq/net ${version}: their client ⇄ our server`, async () => {
    using _ = quiet();
    const server = await ourFeedServer(version);
    const theirs = await Net.Connection.connect(server.url, {
      transport: server.quic as unknown as WebTransport,
    });
    const ours = await server.ours;
    assert.equal(theirs.version, version);
    assert.equal(ours.version, version);
    await weServeThem(ours, server.producer, theirs, GROUPS);
    await theyServeUs(ours, theirs, GROUPS);
    theirs.close();
    await ours.closed;
    server.stop();
  });

  Deno.test(`@moq/net ${version}: our client ⇄ their server`, async () => {
    using _ = quiet();
    const { producer, ours, theirs, stop } = await theirFeedServer(
      version,
      (conn, url) => Net.Connection.accept(conn as unknown as WebTransport, url),
      "/?jwt=x",
    );
    assert.equal(theirs.version, version);
    await weServeThem(ours, producer, theirs, GROUPS);
    await theyServeUs(ours, theirs, GROUPS);
    ours.close(0, "done");
    await theirs.closed.catch(() => {});
    stop();
  });
}
