// The live tracks a funnel keeps open are bounded: an outsider posting to ever more tracks
// makes the publisher (relay session side) and the listener's worker close the least recently
// used idle ones; as many broadcasts with every track closed stay announced (a relay still routes
// to them), and the rest are withdrawn. A subscriber of a closed track
// still gets its newest record, what came before (FETCH, read back from the ledger) and what
// comes next; a track with a subscriber is never closed.
import assert from "node:assert/strict";
import { MemoryBackend } from "../../../src/ledger/mod.ts";
import { LivePublisher, MAX_LIVE_TRACKS } from "../../../src/funnel/live/mod.ts";
import type { TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { quiet } from "../../support/quiet.ts";
import { distinctTrack, postDistinctTracks } from "../../support/distinct_tracks.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";
import { until, within } from "../../support/wait.ts";

const decoder = new TextDecoder();

// The bound is lowered to 4 (shipped: MAX_LIVE_TRACKS, 4096) so that a handful of POSTs pass
// it; the twin below runs at the shipped default.
const BOUND = 4;

Deno.test("posting to one track more than the live bound keeps the bound; a closed track reopens for its subscriber with history and live records", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel({}, {
    backend: new MemoryBackend(),
    live: { maxLiveTracks: BOUND },
  });
  const { publisher, listener } = f.funnel.live;
  for (const body of ["1", "2"]) assert.equal((await post(f.base, "b0/t", body)).status, 201);
  // BOUND more tracks, each in a broadcast of its own: b0/t is the least recently used.
  for (let i = 1; i <= BOUND; i++) assert.equal((await post(f.base, `b${i}/t`, "0")).status, 201);

  assert.equal(publisher.openTracks, BOUND);
  assert.equal(publisher.producer("b0", "t"), undefined);
  assert.ok(publisher.broadcasts().includes("b0"), "closed, b0 is still announced");
  // The worker applies records a turn later than the main thread.
  await until(async () => await listener!.subscribers(`b${BOUND}`, "t") === 0, "the worker");
  assert.equal(await listener!.subscribers("b0", "t"), undefined, "the worker closed b0/t too");
  // BOUND + 1 more: BOUND broadcasts stay announced with every track closed, the rest withdrawn,
  // the one closed longest ago first.
  for (let i = BOUND + 1; i <= 2 * BOUND + 1; i++) await post(f.base, `b${i}/t`, "0");
  assert.equal(publisher.openTracks, BOUND);
  assert.equal(publisher.broadcasts().length, 2 * BOUND, publisher.broadcasts().join(" "));
  assert.ok(!publisher.broadcasts().includes("b0") && !publisher.broadcasts().includes("b1"));

  // The relay session's side: a SUBSCRIBE for the closed track opens it again from the ledger.
  const reopened = await publisher.serve({ path: "b0", track: "t" });
  assert.equal(typeof reopened, "object");
  assert.equal((reopened as TrackProducer).latest, 2, "opened with its newest record");
  assert.equal(await publisher.serve({ path: "nowhere", track: "t" }), "not_found");
  assert.equal(await publisher.serve({ path: "..", track: "t" }), "not_found");

  // The own listener's side: its worker asks the main thread's ledger.
  const moq = await dialOurs(f.moqPort);
  try {
    const b0 = moq.subscribe("b0", "t");
    assert.deepEqual(await take(b0, 1), [{ seq: 2, frame: '{"payload":2}' }]);
    const before = await moq.fetch("b0", "t", 1);
    assert.equal(decoder.decode(before?.frames[0]), '{"payload":1}', "history: read back");
    // Tracks with a subscriber stay open however many others are posted to.
    for (let i = 10; i < 10 + 2 * BOUND; i++) await post(f.base, `b${i}/t`, "0");
    assert.equal(await listener!.subscribers("b0", "t"), 1);
    assert.equal((await post(f.base, "b0/t", "3")).status, 201);
    assert.deepEqual(await take(b0, 1), [{ seq: 3, frame: '{"payload":3}' }], "live");
    assert.ok(publisher.openTracks <= BOUND + 1, `${publisher.openTracks} open`);
    await assert.rejects(moq.subscribe("nowhere", "t").ready);
  } finally {
    moq.close(0, "");
  }
});

Deno.test("at the shipped default, posting to MAX_LIVE_TRACKS + 1 tracks keeps MAX_LIVE_TRACKS open", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel({}, { backend: new MemoryBackend() });
  const { publisher, listener } = f.funnel.live;
  // Track 0 first, alone, so that it is the least recently used.
  const first0 = await postDistinctTracks(f.base, 0, 1, 1);
  assert.equal(first0.statuses.get(201), 1, first0.firstRefusal);
  const outcome = await postDistinctTracks(f.base, 1, MAX_LIVE_TRACKS, 16);
  assert.equal(outcome.statuses.get(201), MAX_LIVE_TRACKS, outcome.firstRefusal);
  assert.equal(publisher.openTracks, MAX_LIVE_TRACKS);
  assert.equal(publisher.closedTracks, 1);
  const [, first] = distinctTrack(0).split("/");
  const [, last] = distinctTrack(MAX_LIVE_TRACKS).split("/");
  await until(async () => await listener!.subscribers("distinct", last!) === 0, "the worker");
  assert.equal(await listener!.subscribers("distinct", first!), undefined);
  const moq = await dialOurs(f.moqPort);
  try {
    assert.deepEqual(await take(moq.subscribe("distinct", first!), 1), [
      { seq: 1, frame: '{"payload":{"i":0}}' },
    ]);
  } finally {
    moq.close(0, "");
  }
});

Deno.test("at the shipped default, a publisher keeps MAX_LIVE_TRACKS broadcasts with every track closed announced, and withdraws the rest", () => {
  const publisher = new LivePublisher();
  try {
    const count = 2 * MAX_LIVE_TRACKS + 1;
    for (let i = 0; i < count; i++) {
      publisher.trackCreated({ broadcast: [`b${i}`], track: "t" }, undefined);
    }
    assert.equal(publisher.openTracks, MAX_LIVE_TRACKS);
    assert.equal(publisher.broadcasts().length, 2 * MAX_LIVE_TRACKS);
    assert.ok(!publisher.broadcasts().includes("b0"), "the one closed first is withdrawn");
    assert.ok(publisher.broadcasts().includes("b1"));
  } finally {
    publisher.close();
  }
});

Deno.test("at the shipped default, a restart's stored tracks announce at most MAX_LIVE_TRACKS broadcasts (the last listed), open none, and a subscription opens its track", async () => {
  let looked = 0;
  const publisher = new LivePublisher({
    lookupTrack: (path) => {
      looked++;
      const newest = { epoch: 1, seq: 4, wallclock: 1n, payload: `"${path.broadcast[0]}"` };
      return Promise.resolve({ newest });
    },
  });
  try {
    const count = MAX_LIVE_TRACKS + 10;
    // Two tracks a broadcast, as a listing gives them.
    const paths = Array.from({ length: 2 * count }, (_, i) => ({
      broadcast: [`b${i >> 1}`],
      track: `t${i % 2}`,
    }));
    publisher.tracksStored(paths);
    assert.equal(publisher.openTracks, 0);
    assert.equal(publisher.broadcasts().length, MAX_LIVE_TRACKS);
    assert.ok(!publisher.broadcasts().includes("b9") && publisher.broadcasts().includes("b10"));
    // Told again (a resync): nothing changes.
    publisher.tracksStored(paths);
    assert.equal(publisher.broadcasts().length, MAX_LIVE_TRACKS);
    const served = await publisher.serve({ path: "b10", track: "t1" });
    assert.equal((served as TrackProducer).latest, 5, "opened with its newest record");
    assert.equal(looked, 1);
    assert.equal(publisher.openTracks, 1);
  } finally {
    publisher.close();
  }
});

Deno.test("through a relay, a subscriber of a closed track (its broadcast still announced) gets its newest record, what came before and what comes next", async () => {
  using _q = quiet();
  const relay = await startTestRelay();
  const files = await testCertificateFiles();
  // Bound lowered to 4 as above (shipped MAX_LIVE_TRACKS).
  const f = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
  }, { backend: new MemoryBackend(), live: { maxLiveTracks: BOUND } });
  let subscriber: Awaited<ReturnType<typeof dialOurs>> | undefined;
  try {
    await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
    const { publisher } = f.funnel.live;
    for (const body of ["1", "2"]) assert.equal((await post(f.base, "b0/t", body)).status, 201);
    for (let i = 1; i <= BOUND; i++) assert.equal((await post(f.base, `b${i}/t`, "0")).status, 201);
    assert.equal(publisher.producer("b0", "t"), undefined, "b0/t is closed");
    subscriber = await dialOurs(relay.port);
    await within(seeAnnounced(subscriber, "b0"), 10_000, "b0 announced at the relay");
    const sub = subscriber.subscribe("b0", "t");
    assert.deepEqual(await take(sub, 1), [{ seq: 2, frame: '{"payload":2}' }]);
    const before = await subscriber.fetch("b0", "t", 1);
    assert.equal(decoder.decode(before?.frames[0]), '{"payload":1}', "history: read back");
    assert.equal((await post(f.base, "b0/t", "3")).status, 201);
    assert.deepEqual(await take(sub, 1), [{ seq: 3, frame: '{"payload":3}' }], "live");
  } finally {
    subscriber?.close(0, "");
    await f[Symbol.asyncDispose]();
    await relay.stop();
  }
});
