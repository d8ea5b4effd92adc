// End-to-end relay tests over real sessions: our moq client and @moq/net
// (native QUIC, lite-05 and lite-04) through the relay.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { connect, TrackProducer, VERSIONS } from "../../src/moq/mod.ts";
import { connectWebTransport } from "../../src/transport/mod.ts";
import { families, histogramSeries, sampleValue } from "../support/prometheus.ts";
import { testCertificate } from "../support/certs.ts";
import { dialNet, dialOurs, seeAnnounced, stallable } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { until } from "../support/wait.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { RELAY_DEFAULTS } from "../../src/config/mod.ts";
import { BEYOND_SPEC_METRICS, SPEC_METRICS } from "./metrics/_spec_metrics.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function publisher(port: number, path: string, track: string, jwt?: string) {
  const producer = new TrackProducer({ cache: 8 });
  const moq = await dialOurs(port, {
    ...(jwt ? { jwt } : {}),
    moq: { serve: (r) => (r.path === path && r.track === track ? producer : "not_found") },
  });
  moq.announce(path);
  return { moq, producer };
}

Deno.test("relay fans one track out to our clients and @moq/net, sharing one upstream", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  const pub = await publisher(t.port, "room/1", "chat");
  const subs = [
    await dialOurs(t.port, { alpn: "moq-lite-05" }),
    await dialOurs(t.port, { alpn: "moq-lite-04" }),
  ];
  for (const s of subs) await seeAnnounced(s, "room/1");
  const ourSubs = subs.map((s) => s.subscribe("room/1", "chat"));
  await Promise.all(ourSubs.map((s) => s.ready));
  const net = await dialNet(t.port, { version: "moq-lite-05" });
  const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({ priority: 1 });

  // Each group is written once every subscriber has the previous one.
  const iters = ourSubs.map((s) => s[Symbol.asyncIterator]());
  const received: number[][] = [[], [], []];
  let payloadBytes = 0;
  for (let seq = 1; seq <= 10; seq++) {
    const text = `record ${seq}`;
    payloadBytes += enc.encode(text).length;
    pub.producer.writeGroup(seq, enc.encode(text));
    for (let i = 0; i < iters.length; i++) {
      const r = await iters[i]!.next();
      assert.equal(dec.decode(r.value!.frames[0]), text);
      received[i]!.push(r.value!.sequence);
    }
    // @moq/net's first group may be any recent one (it subscribed while we wrote).
    if (received[2]!.length === 0 || received[2]!.at(-1)! < seq) {
      for (;;) {
        const g = await netSub.recvGroup();
        assert.ok(g);
        const f = await g.readFrame();
        assert.equal(dec.decode(f?.payload), `record ${g.sequence}`);
        received[2]!.push(g.sequence);
        if (g.sequence >= seq) break;
      }
    }
  }
  const seqs = Array.from({ length: 10 }, (_, i) => i + 1);
  assert.deepEqual(received[0], seqs);
  assert.deepEqual(received[1], seqs);
  assert.equal(received[2]!.at(-1), 10);

  const text = await (await t.get("/metrics")).text();
  const f = families(text);
  const labels = { path: "/room/1", track: "chat" };
  assert.equal(sampleValue(f, "sluice_relay_track_upstream_requests_total", labels), 1);
  assert.equal(sampleValue(f, "sluice_relay_track_distributor_reuses_total", labels), 2);
  assert.equal(sampleValue(f, "sluice_relay_track_subscriptions_active", labels), 3);
  assert.equal(sampleValue(f, "sluice_relay_subscribers_active"), 3);
  assert.equal(sampleValue(f, "sluice_relay_sessions_active"), 4);
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", { transport: "quic", class: "client" }),
    4,
  );
  assert.equal(sampleValue(f, "sluice_relay_broadcasts_active"), 1);
  assert.equal(
    sampleValue(f, "sluice_relay_ingress_bytes_total", { track: "/room/1/chat" }),
    payloadBytes,
  );
  // Our two subscribers got every group; @moq/net got the ones from its start on.
  const egress = sampleValue(f, "sluice_relay_egress_bytes_total", { track: "/room/1/chat" })!;
  assert.ok(egress >= 2 * payloadBytes && egress <= 3 * payloadBytes, `egress ${egress}`);
  // GROUP_CACHE_SIZE (8), plus those of the ten groups still young enough to be a burst.
  const depth = sampleValue(f, "sluice_relay_buffer_depth_groups", { track: "/room/1/chat" })!;
  assert.ok(depth >= 8 && depth <= 10, `buffer depth ${depth}`);
  const delivery = histogramSeries(text, "sluice_relay_group_delivery_seconds");
  assert.equal(delivery.length, 1);
  assert.ok(delivery[0]!.count >= 20, `delivered ${delivery[0]!.count}`);
  const upstream = histogramSeries(text, "sluice_relay_track_upstream_request_duration_seconds");
  assert.deepEqual(upstream.map((h) => [h.labels, h.count]), [[labels, 1]]);
  // Only the spec's labels, never a per-session or per-subscriber one (except `remote`).
  const allowedLabels = new Map(
    [...SPEC_METRICS, ...BEYOND_SPEC_METRICS].map((m) => [m.name, new Set(m.labels)]),
  );
  for (const [name, fam] of f) {
    for (const s of fam.metrics) {
      for (const l of Object.keys(s.labels ?? {})) {
        assert.ok(allowedLabels.get(name)?.has(l), `${name} has label ${l}`);
      }
    }
  }

  const routes = await (await t.get("/routes")).json();
  assert.equal(routes.live, true);
  assert.equal(routes.ready, true);
  assert.equal(routes.paths.length, 1);
  const p = routes.paths[0];
  assert.equal(p.path, "/room/1");
  assert.equal(p.active, true);
  assert.equal(p.hops, 0, "the publisher is connected to this relay");
  assert.match(p.source, /^127\.0\.0\.1:\d+$/);
  assert.ok(Number.isInteger(p.rtt_ms) && Number.isInteger(p.bitrate_bps));
  for (const k of ["announced_at", "last_updated", "timestamp"]) {
    const v = k === "timestamp" ? routes[k] : p[k];
    assert.equal(new Date(v).toISOString(), v, `${k} is an ISO 8601 UTC timestamp`);
  }

  netSub.close();
  net.close();
  for (const s of subs) s.close(0, "done");
  pub.moq.close(0, "done");
  await t.stop();
});

Deno.test("a late joiner starts at the latest group; publisher gone ends the broadcast", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  const pub = await publisher(t.port, "live/a", "t");
  const early = await dialOurs(t.port);
  await seeAnnounced(early, "live/a");
  const s1 = early.subscribe("live/a", "t");
  await s1.ready;
  const it1 = s1[Symbol.asyncIterator]();
  for (let seq = 1; seq <= 5; seq++) {
    pub.producer.writeGroup(seq, enc.encode(`g${seq}`));
    assert.equal((await it1.next()).value?.sequence, seq);
  }
  const late = await dialOurs(t.port, { alpn: "moq-lite-04" });
  const s2 = late.subscribe("live/a", "t");
  await s2.ready;
  const it2 = s2[Symbol.asyncIterator]();
  const first = (await it2.next()).value!;
  assert.equal(first.sequence, 5, "the late joiner starts at the latest group");
  assert.equal(dec.decode(first.frames[0]), "g5");

  // The publisher's session ends: both subscriptions finish and the route is gone.
  pub.moq.close(0, "bye");
  assert.equal((await it1.next()).done, true);
  assert.equal((await it2.next()).done, true);
  await until(async () => (await (await t.get("/routes")).json()).paths.length === 0, "route gone");
  const f = families(await (await t.get("/metrics")).text());
  assert.equal(sampleValue(f, "sluice_relay_broadcasts_active"), 0);
  await until(async () => {
    const g = families(await (await t.get("/metrics")).text());
    return sampleValue(g, "sluice_relay_sessions_active") === 2;
  }, "publisher session accounted as closed");
  const g = families(await (await t.get("/metrics")).text());
  assert.equal(
    sampleValue(g, "sluice_relay_sessions_closed_total", {
      transport: "quic",
      class: "client",
      reason: "closed",
    }),
    1,
  );
  assert.ok(
    sampleValue(g, "sluice_relay_session_bytes_total", {
      transport: "quic",
      class: "client",
      direction: "received",
    })! > 0,
  );
  early.close(0, "");
  late.close(0, "");
  await t.stop();
});

// A ring and lag bound of 4 (shipped 8): the stalled subscriber falls behind after fewer groups;
// the twin at the shipped size keeps the same promise.
for (const cacheSize of [4, RELAY_DEFAULTS.GROUP_CACHE_SIZE]) {
  Deno.test(`a slow subscriber is skipped forward without slowing a fast one (ring of ${cacheSize})`, async () => {
    using _q = quiet();
    // The relay's clock moves only when told: a stall "lasts" past the burst window below.
    const clock = new ManualClock();
    const t = await startTestRelay({ cacheSize, extra: { now: clock.now } });
    const pub = await publisher(t.port, "live/b", "t");
    const fast = await dialOurs(t.port);
    let gate!: ReturnType<typeof stallable>;
    // Few concurrent uni streams: a reader that stops accepting them stalls the relay's sends.
    const slow = await dialOurs(t.port, {
      maxUni: 2,
      wrap: (s) => (gate = stallable(s)).session,
    });
    await seeAnnounced(fast, "live/b");
    const fs = fast.subscribe("live/b", "t");
    const ss = slow.subscribe("live/b", "t");
    await Promise.all([fs.ready, ss.ready]);
    const fit = fs[Symbol.asyncIterator]();
    const sit = ss[Symbol.asyncIterator]();
    pub.producer.writeGroup(1, enc.encode("g1"));
    assert.equal((await fit.next()).value?.sequence, 1);
    assert.equal((await sit.next()).value?.sequence, 1);

    gate.hold();
    const N = 60;
    for (let seq = 2; seq <= N; seq++) {
      pub.producer.writeGroup(seq, enc.encode(`g${seq}`));
      assert.equal((await fit.next()).value?.sequence, seq, "the fast subscriber gets every group");
    }
    // Groups that arrived together within the burst window are not skipped; these are old now.
    clock.advance(1000);
    gate.release();
    const slowGot: number[] = [];
    while (slowGot.at(-1) !== N) slowGot.push((await sit.next()).value!.sequence);
    assert.ok(slowGot.length < N - 1, `the slow subscriber skipped (${slowGot.length} groups)`);
    const f = families(await (await t.get("/metrics")).text());
    assert.ok(sampleValue(f, "sluice_relay_subscriber_skips_total")! >= 1);
    fast.close(0, "");
    slow.close(0, "");
    pub.moq.close(0, "");
    await t.stop();
  });
}

Deno.test("WebTransport and QUIC sessions share a track; a bitrate series per session", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  const pub = await publisher(t.port, "mix/1", "t");
  const c = await testCertificate();
  const wtSession = await connectWebTransport(new URL(`https://localhost:${t.port}/`), {
    protocols: VERSIONS,
    serverCertificateHashes: [c.sha256],
  });
  const viaWt = await connect(wtSession);
  const net = await dialNet(t.port, { version: "moq-lite-04" });
  await seeAnnounced(viaWt, "mix/1");
  const sub = viaWt.subscribe("mix/1", "t");
  await sub.ready;
  pub.producer.writeGroup(1, enc.encode("over webtransport"));
  const g = await sub[Symbol.asyncIterator]().next();
  assert.equal(dec.decode(g.value!.frames[0]), "over webtransport");

  const f = families(await (await t.get("/metrics")).text());
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", { transport: "webtransport", class: "client" }),
    1,
  );
  // Delivered rate per session since the previous scrape, one series per live session.
  const bitrates = f.get("sluice_relay_session_estimated_bitrate_bps")!.metrics;
  assert.equal(bitrates.length, 3);
  assert.ok(
    bitrates.every((m) => Number(m.value) >= 0 && /^127\.0\.0\.1:\d+$/.test(m.labels!.remote!)),
  );
  assert.equal(
    sampleValue(f, "sluice_relay_sessions_total", { transport: "quic", class: "client" }),
    2,
  );
  const routes = await (await t.get("/routes")).json();
  assert.ok(Number.isInteger(routes.paths[0].rtt_ms));
  net.close();
  viaWt.close(0, "");
  pub.moq.close(0, "");
  await t.stop();
});

Deno.test("the relay pings peer relays for their RTT, never its clients", async () => {
  using _q = quiet();
  // Pings every 20 ms (shipped 10 s), so that many rounds pass within the test.
  const t = await startTestRelay({ rttIntervalMs: 20 });
  // What each session is asked for by the relay: a client of ours, and a session that says it is
  // a peer relay (auth off: its URL's `peer` parameter).
  const asked = (paths: string[]) => ({
    serve: (r: { path: string }) => {
      paths.push(r.path);
      return "not_found" as const;
    },
  });
  const clientAsked: string[] = [];
  const peerAsked: string[] = [];
  const client = await dialOurs(t.port, { moq: asked(clientAsked) });
  const net = await dialNet(t.port, { version: "moq-lite-05" });
  const peer = await dialOurs(t.port, { query: "peer=p1", moq: asked(peerAsked) });
  try {
    // Ten pings of the peer: the clients, connected first, have had as many turns by now.
    await until(() => peerAsked.length >= 10, "the peer's pings");
    assert.ok(peerAsked.every((p) => p.includes(".sluice/rtt-ping")), peerAsked.join());
    assert.deepEqual(clientAsked, [], "a client is never sent the ping");
    const f = families(await (await t.get("/metrics")).text());
    const rtts = f.get("sluice_relay_session_rtt_ms")!.metrics;
    assert.equal(rtts.length, 1, "an RTT series for the peer only");
    assert.ok(Number(rtts[0]!.value) >= 0 && Number(rtts[0]!.value) < 5000);
  } finally {
    peer.close();
    net.close();
    client.close();
    await t.stop();
  }
});
