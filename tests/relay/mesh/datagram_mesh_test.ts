// RELAY_DATAGRAM_TRACKS never applies to a peer relay: A (datagrams on for
// the track) feeds B over a peer session on streams, while a client at A
// gets the same groups as datagrams.
import assert from "node:assert/strict";
import { type ReceivedGroup, TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { within } from "../../support/wait.ts";
import { meshCertificate, type MeshRelay, startMeshRelay, stopMesh } from "./_mesh.ts";

const enc = new TextEncoder();

Deno.test("mesh A <- B: a datagram track reaches B's relay session on streams, A's client as datagrams", async () => {
  using _q = quiet();
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  try {
    const a = await startMeshRelay("relay-a", files, [], { RELAY_DATAGRAM_TRACKS: "room/chat" });
    relays.push(a);
    const b = await startMeshRelay("relay-b", files, [a]);
    relays.push(b);
    const chat = new TrackProducer({ cache: 64 });
    const publisher = await dialOurs(a.port, {
      moq: { serve: (r) => (r.path === "room/1" && r.track === "chat" ? chat : "not_found") },
    });
    publisher.announce("room/1");
    const atA = await dialOurs(a.port, { alpn: "moq-lite-05" });
    const atB = await dialOurs(b.port, { alpn: "moq-lite-05" });
    await seeAnnounced(atA, "room/1");
    await seeAnnounced(atB, "room/1");
    const subs = [atA, atB].map((m) => m.subscribe("room/1", "chat", { start: 1 }));
    await Promise.all(subs.map((s) => s.ready));
    const its = subs.map((s) => s[Symbol.asyncIterator]());
    const GROUPS = 10;
    for (let seq = 1; seq <= GROUPS; seq++) {
      chat.writeGroup(seq, enc.encode(`chat ${seq}`));
      for (const it of its) {
        const r = await within(it.next(), 10_000, `group ${seq}`);
        assert.equal((r.value as ReceivedGroup).sequence, seq);
      }
    }
    assert.equal(atA.stats.datagramsReceived, GROUPS);
    assert.equal(atB.stats.datagramsReceived, 0, "B had the groups on streams from A");
    assert.equal(await a.metric("datagram_groups_total"), GROUPS, "only A's client got datagrams");
    assert.equal(await b.metric("datagram_groups_total"), 0);
    for (const m of [atA, atB, publisher]) m.close(0, "");
  } finally {
    await stopMesh(relays, files);
  }
});
