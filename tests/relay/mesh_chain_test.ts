// A chain of three relay processes, A <- B <- C (PEERS on C and B): an @moq/net
// publisher at A, our subscriber and an @moq/net one at C, 300 groups in
// order; /routes and the metrics of every relay match what happened.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { dialNet, dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { until, within } from "../support/wait.ts";
import { meshCertificate, type MeshRelay, routeOf, startMeshRelay, stopMesh } from "./_mesh.ts";

const GROUPS = 300;
const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("chain A <- B <- C: @moq/net publishes at A, ours and @moq/net subscribe at C, 300 groups in order", async () => {
  using _q = quiet();
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  try {
    const a = await startMeshRelay("relay-a", files);
    relays.push(a);
    const b = await startMeshRelay("relay-b", files, [a]);
    relays.push(b);
    const c = await startMeshRelay("relay-c", files, [b]);
    relays.push(c);

    const publisher = await dialNet(a.port);
    const broadcast = new Net.Broadcast.Producer();
    const track = broadcast.createTrack("video");
    publisher.publish(Net.Path.from("live/cam"), broadcast);

    const ours = await dialOurs(c.port);
    await seeAnnounced(ours, "live/cam");
    const route = await routeOf(c, "/live/cam");
    assert.equal(route.hops, 2, "C reaches the publisher through B and A");
    assert.equal(route.source, b.address);
    assert.equal((await routeOf(b, "/live/cam")).hops, 1);
    assert.equal((await routeOf(b, "/live/cam")).source, a.address);
    assert.equal((await routeOf(a, "/live/cam")).hops, 0);

    const net = await dialNet(c.port);
    const sub = ours.subscribe("live/cam", "video");
    const netSub = net.consume(Net.Path.from("live/cam")).track("video").subscribe({});
    // Nothing flows until the chain is subscribed end to end: probe until both have a group.
    const write = (text: string) => {
      const g = track.appendGroup();
      g.writeString(text);
      g.close();
      return g.sequence;
    };
    const it = sub[Symbol.asyncIterator]();
    let lastProbe = -1;
    const probing = setInterval(() => (lastProbe = write("probe")), 50);
    let ourFirst: number;
    try {
      ourFirst = (await within(it.next(), 10_000, "our next group")).value!.sequence;
      const netFirst = await within(netSub.recvGroup(), 10_000, "@moq/net's next group");
      assert.ok(netFirst);
    } finally {
      clearInterval(probing);
    }
    assert.ok(ourFirst <= lastProbe);
    // Skip the probes still on their way, then the 300 groups must come in order.
    const first = lastProbe + 1;
    const writing = (async () => {
      for (let i = 0; i < GROUPS; i++) {
        assert.equal(write(`group ${first + i}`), first + i);
        if (i % 10 === 9) await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const ourGot: number[] = [];
    for (;;) {
      const g = (await within(it.next(), 10_000, "our next group")).value!;
      if (g.sequence < first) continue;
      assert.equal(dec.decode(g.frames[0]), `group ${g.sequence}`);
      ourGot.push(g.sequence);
      if (g.sequence === first + GROUPS - 1) break;
    }
    const netGot: number[] = [];
    for (;;) {
      const g = await within(netSub.recvGroup(), 10_000, "@moq/net's next group");
      assert.ok(g, "the @moq/net subscription ended early");
      if (g.sequence < first) continue;
      const f = await g.readFrame();
      assert.equal(dec.decode(f?.payload), `group ${g.sequence}`);
      netGot.push(g.sequence);
      if (g.sequence === first + GROUPS - 1) break;
    }
    await writing;
    const expected = Array.from({ length: GROUPS }, (_, i) => first + i);
    assert.deepEqual(ourGot, expected, "our subscriber: every group once, in order");
    assert.deepEqual(netGot, expected, "@moq/net's subscriber: every group once, in order");

    // What each relay says happened.
    const labels = { path: "/live/cam", track: "video" };
    const payload = (n: number) => enc.encode(`group ${n}`).length;
    const bytes = expected.reduce((s, n) => s + payload(n), 0);
    for (const r of [a, b, c]) {
      assert.equal(
        await r.metric("track_upstream_requests_total", labels),
        1,
        `${r.name}: one upstream`,
      );
      assert.equal(await r.metric("broadcasts_active"), 1);
      assert.equal(await r.metric("route_rejections_total", { reason: "inferior_hops" }), 0);
      assert.ok((await r.metric("ingress_bytes_total", { track: "/live/cam/video" })) >= bytes);
      assert.equal(await r.metric("subscriber_skips_total"), 0, `${r.name}: no skips`);
    }
    assert.equal(await a.metric("sessions_total", { transport: "quic", class: "client" }), 1);
    assert.equal(await a.metric("sessions_total", { transport: "quic", class: "peer" }), 1);
    assert.equal(await a.metric("peers_connected"), 0, "A dials nobody");
    assert.equal(await b.metric("peers_connected"), 1);
    assert.equal(await b.metric("peer_dial_attempts_total", { peer: a.address, result: "ok" }), 1);
    assert.equal(await b.metric("sessions_total", { transport: "quic", class: "peer" }), 2);
    assert.equal(await c.metric("peers_connected"), 1);
    assert.equal(await c.metric("peer_dial_attempts_total", { peer: b.address, result: "ok" }), 1);
    assert.equal(await c.metric("dial_retries_total", { peer: b.address }), 0);
    assert.equal(await c.metric("sessions_total", { transport: "quic", class: "client" }), 2);
    assert.equal(await c.metric("track_subscriptions_active", labels), 2);
    assert.equal(await c.metric("track_distributor_reuses_total", labels), 1);
    assert.ok((await c.metric("egress_bytes_total", { track: "/live/cam/video" })) >= 2 * bytes);
    assert.equal(await b.metric("track_subscriptions_active", labels), 1, "C's one upstream");
    assert.equal(await a.metric("track_subscriptions_active", labels), 1, "B's one upstream");
    assert.ok((await c.routes())[0]!.bitrate_bps > 0, "C measured the route's bitrate");

    sub.close();
    netSub.close();
    ours.close();
    net.close();
    broadcast.close();
    publisher.close();
    await until(async () => (await a.metric("sessions_active")) === 1, "A's clients to leave");
  } finally {
    await stopMesh(relays, files);
  }
});
