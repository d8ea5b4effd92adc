// Relays peering over WebSocket: B dials A as `wss://` (PEERS=wss://…), as a relay
// behind a network that drops UDP would; our publisher at A, our subscriber at B,
// 300 groups in order, and both relays count the peer session as transport="websocket".
import assert from "node:assert/strict";
import { TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { within } from "../../support/wait.ts";
import { meshCertificate, type MeshRelay, routeOf, startMeshRelay, stopMesh } from "./_mesh.ts";

const GROUPS = 300;
const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("B peers with A over wss://: A's publisher reaches B's subscriber, 300 groups in order", async () => {
  using _q = quiet();
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  try {
    const a = await startMeshRelay("relay-a", files);
    relays.push(a);
    const b = await startMeshRelay("relay-b", files, [`wss://127.0.0.1:${a.port}`]);
    relays.push(b);

    const producer = new TrackProducer({ cache: 32 });
    const publisher = await dialOurs(a.port, { moq: { serve: () => producer } });
    publisher.announce("live/cam");
    const ours = await dialOurs(b.port);
    await seeAnnounced(ours, "live/cam");
    const route = await routeOf(b, "/live/cam");
    assert.equal(route.hops, 1);
    assert.equal(route.source, a.address);

    const sub = ours.subscribe("live/cam", "video");
    await sub.ready;
    const it = sub[Symbol.asyncIterator]();
    // The subscription is live once a probe comes through the peer link.
    let seq = 0;
    const probing = setInterval(() => producer.writeGroup(++seq, enc.encode(`g${seq}`)), 50);
    let got: number;
    try {
      got = (await within(it.next(), 10_000, "the first group")).value!.sequence;
    } finally {
      clearInterval(probing);
    }
    while (got < seq) got = (await within(it.next(), 10_000, "the probes")).value!.sequence;
    const first = seq + 1;
    const received: number[] = [];
    for (let n = 0; n < GROUPS; n++) {
      producer.writeGroup(++seq, enc.encode(`g${seq}`));
      // One at a time through two relays: every group, in order, none skipped.
      const g = (await within(it.next(), 10_000, `group ${seq}`)).value!;
      assert.equal(dec.decode(g.frames[0]), `g${g.sequence}`);
      received.push(g.sequence);
    }
    assert.deepEqual(received, Array.from({ length: GROUPS }, (_, i) => first + i));

    assert.equal(await b.metric("peers_connected"), 1);
    assert.equal(
      await b.metric("peer_dial_attempts_total", { peer: a.address, result: "ok" }),
      1,
    );
    assert.equal(await a.metric("sessions_total", { transport: "websocket", class: "peer" }), 1);
    assert.equal(await b.metric("sessions_total", { transport: "websocket", class: "peer" }), 1);
    assert.equal(await a.metric("sessions_total", { transport: "quic", class: "peer" }), 0);
    sub.close();
    ours.close(0, "");
    publisher.close(0, "");
  } finally {
    await stopMesh(relays, files);
  }
});
