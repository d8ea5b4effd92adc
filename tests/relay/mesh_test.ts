// Relays meshed in one process (fast): announcements and groups cross peers,
// hop counts and /routes, loop-free rings, and routes moving without ending
// subscriptions. The same behaviour between relay processes is in
// mesh_process_test.ts.
import assert from "node:assert/strict";
import { type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { startLiveFunnel } from "../funnel/live_helpers.ts";
import { until } from "../support/wait.ts";
import { startTestRelay, type TestRelay } from "./_relay.ts";

async function relay(name: string, peers: TestRelay[] = [], extra = {}): Promise<TestRelay> {
  return await startTestRelay({
    extra: {
      name,
      peers: peers.map((p) => ({ host: "127.0.0.1", port: p.port })),
      ...extra,
    },
  });
}

/** Publishes `path`/`track` from our client on `port`; returns the track and the session. */
async function publish(port: number, path: string, track: TrackProducer): Promise<MoqSession> {
  return await dialOurs(port, {
    moq: { serve: (r) => (r.path === path && r.track === "t" ? track : "not-found") },
  }).then((moq) => {
    moq.announce(path);
    return moq;
  });
}

async function routes(r: TestRelay) {
  return (await (await r.get("/routes")).json()).paths as {
    path: string;
    hops: number;
    source: string;
  }[];
}

Deno.test("a chain A <- B <- C carries a broadcast from A to C, hops 2 through B", async () => {
  const a = await relay("a");
  const b = await relay("b", [a]);
  const c = await relay("c", [b]);
  const track = new TrackProducer();
  const pub = await publish(a.port, "room/1", track);
  const sub = await dialOurs(c.port);
  try {
    await seeAnnounced(sub, "room/1");
    const got: number[] = [];
    const s = sub.subscribe("room/1", "t");
    await s.ready;
    const reading = (async () => {
      for await (const g of s) {
        got.push(g.sequence);
        if (g.sequence === 20) break;
      }
    })();
    await until(async () => (await routes(c)).length === 1, "C's route");
    for (let i = 1; i <= 20; i++) {
      track.writeGroup(i, new TextEncoder().encode(`g${i}`));
      await new Promise((r) => setTimeout(r, 2));
    }
    await reading;
    assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => i + 1));
    const [route] = await routes(c);
    assert.equal(route?.hops, 2);
    assert.equal(route?.source, `127.0.0.1:${b.port}`);
    assert.equal((await routes(b))[0]?.hops, 1);
    assert.equal((await routes(a))[0]?.hops, 0);
  } finally {
    sub.close();
    pub.close();
    await c.stop();
    await b.stop();
    await a.stop();
  }
});

/** Counts `active` announcements of each path a session sees over `ms`. */
async function announcementsSeen(moq: MoqSession, ms: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  for await (const e of moq.announced("", { signal: ac.signal })) {
    if (e.active) counts.set(e.path, (counts.get(e.path) ?? 0) + 1);
  }
  clearTimeout(timer);
  return counts;
}

Deno.test("a ring of four relays converges: each broadcast once per relay, no loop", async () => {
  // a <- b <- c <- d, and d -> a closes the ring: every relay has two peer sessions.
  const a = await relay("a");
  const b = await relay("b", [a]);
  const c = await relay("c", [b]);
  const d = await relay("d", [c, a]);
  const tracks = [new TrackProducer(), new TrackProducer()];
  const pubs = [await publish(a.port, "one", tracks[0]!), await publish(c.port, "two", tracks[1]!)];
  const watchers = await Promise.all([a, b, c, d].map((r) => dialOurs(r.port)));
  try {
    const seen = await Promise.all(watchers.map((w) => announcementsSeen(w, 1500)));
    for (const s of seen) {
      assert.deepEqual([...s.entries()].sort(), [["one", 1], ["two", 1]], JSON.stringify([...s]));
    }
    // Every relay settled on its shortest path; nothing is still churning.
    const before = await Promise.all(
      [a, b, c, d].map((r) => r.get("/metrics").then((x) => x.text())),
    );
    await new Promise((r) => setTimeout(r, 500));
    const after = await Promise.all(
      [a, b, c, d].map((r) => r.get("/metrics").then((x) => x.text())),
    );
    const routeLines = (t: string) =>
      t.split("\n").filter((l) =>
        /route_(replacements|rejections|promotions)_total/.test(l) && !l.startsWith("#")
      );
    assert.deepEqual(after.map(routeLines), before.map(routeLines));
    const hops = async (r: TestRelay) =>
      Object.fromEntries((await routes(r)).map((p) => [p.path, p.hops]));
    // Relays between each relay and the publisher ("one" at a, "two" at c).
    assert.deepEqual(await hops(a), { "/one": 0, "/two": 2 });
    assert.deepEqual(await hops(c), { "/one": 2, "/two": 0 });
    assert.deepEqual(await hops(d), { "/one": 1, "/two": 1 });
    assert.deepEqual(await hops(b), { "/one": 1, "/two": 1 });
  } finally {
    for (const w of watchers) w.close();
    for (const p of pubs) p.close();
    for (const r of [d, c, b, a]) await r.stop();
  }
});

/** Posts `n` records to `room/1/chat`, one every `everyMs`; resolves with their payloads. */
async function postEvery(base: string, n: number, everyMs: number, from = 0): Promise<string[]> {
  const sent: string[] = [];
  for (let i = from; i < from + n; i++) {
    const r = await fetch(`${base}/tracks/room/1/chat`, { method: "POST", body: `"r${i}"` });
    await r.body?.cancel();
    assert.equal(r.status, 201);
    sent.push(`r${i}`);
    await new Promise((res) => setTimeout(res, everyMs));
  }
  return sent;
}

/** Reads records of a subscription until `last` arrives; returns the payloads in arrival order. */
async function readUntil(sub: AsyncIterable<{ frames: Uint8Array[] }>, last: string) {
  const got: string[] = [];
  for await (const g of sub) {
    const payload = JSON.parse(new TextDecoder().decode(g.frames[0])).payload as string;
    got.push(payload);
    if (payload === last) break;
  }
  return got;
}

Deno.test("a draining relay's GOAWAY moves its funnel and its peers to the redirect; no record lost or doubled", async () => {
  const files = await testCertificateFiles();
  const w = await relay("w");
  const x = await relay("x", [], { goawayUri: `moqt://localhost:${w.port}/` });
  const y = await relay("y", [x]);
  const f = await startLiveFunnel({
    RELAY_URL: `moqt://localhost:${x.port}/`,
    RELAY_CA_FILE: files.cert,
    FUNNEL_SERVE_ADDR: "none",
  });
  const sub = await dialOurs(y.port);
  try {
    await postEvery(f.base, 1, 0);
    await seeAnnounced(sub, "room/1");
    const s = sub.subscribe("room/1", "chat");
    await s.ready;
    const reading = readUntil(s, "r40");
    const posting = postEvery(f.base, 40, 10, 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await x.relay.drain(5000), true, "every session left the draining relay");
    const sent = await posting;
    const got = await reading;
    const first = got.indexOf(sent[0]!);
    assert.deepEqual(got.slice(first), sent, "every record once, in order");
    const [route] = await routes(y);
    assert.equal(route?.source, `127.0.0.1:${w.port}`, "y reaches the funnel through the redirect");
    assert.equal(y.relay.metrics.peerGoawayReceivedTotal.value({ redirect: "true" }), 1);
    assert.equal(y.relay.metrics.subscriberSkipsTotal.value(), 0);
    assert.ok(
      y.logs.some((l) => l.includes("sent GOAWAY naming moqt://localhost")),
      y.logs.join("\n"),
    );
  } finally {
    sub.close();
    await f[Symbol.asyncDispose]();
    for (const r of [y, x, w]) await r.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
});
