/**
 * IETF MoQ Transport: groups that grow after their streams started
 * (cut-through) count against the session's bound as their objects are
 * written. A subscriber opens 8 subscriptions to a track of 8 live groups and
 * never reads a data stream; the groups then grow to 4 MiB each, in objects
 * of 1 MiB. Before, the session counted each group at its size when its
 * stream started (1 KiB) and wrote every object after it uncounted: 64
 * streams' pending writes of 1 MiB were not counted at all, so a next group
 * still started for that subscriber (and so would any number of them). Now
 * the session counts what its transport has not taken yet, each object
 * waits for room past the bound, and so does a next group: the session
 * holds the bound and one object. Its twin: a subscriber that reads one
 * stream at a time, oldest first, gets every object (the session's oldest
 * stream of a growing group goes on past the bound).
 */
import assert from "node:assert/strict";
import {
  acceptIetf,
  IETF_VERSION,
  ietfCodec as c,
  type IetfSession,
  LiveFrames,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { SESSION_BYTES_IN_FLIGHT } from "../../../src/moq/session/mod.ts";
import { FRAME_COST } from "../../../src/moq/track/mod.ts";
import { StreamReader } from "../../../src/wire/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until, within } from "../../support/wait.ts";

const MiB = 1 << 20;
const KiB = 1 << 10;
const SUBSCRIPTIONS = 8;
const GROUPS = 8;
// Objects large enough that the 64 streams' pending writes (one each) reach the session's bound.
const FRAME = MiB;
const FRAMES = 4; // 4 MiB a group once grown
const GROUP = FRAME * FRAMES + KiB;
// The session's bound and one object past it (an object counts FRAME_COST besides its payload).
const HELD_BOUND = SESSION_BYTES_IN_FLIGHT + FRAME + FRAME_COST;
// Stream and object headers besides the payload written (a few bytes each).
const HEADERS = 64 * KiB;

// A session serving `track` to a raw client that subscribes `SUBSCRIPTIONS` times from group 0.
async function served(track: TrackProducer): Promise<{
  pair: Awaited<ReturnType<typeof quicPair>>;
  server: IetfSession;
}> {
  const pair = await quicPair("moq-00");
  const serverP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
  const stream = await pair.client.openBidi();
  const w = stream.writable.getWriter();
  const r = new StreamReader(stream.readable);
  const send = (type: number, body: Uint8Array) => w.write(c.frameControl(type, body));
  const next = async () => (await within(c.readControl(r), 5000, "a control message"))!;
  await send(
    c.Msg.ClientSetup,
    c.encodeClientSetup({
      versions: [IETF_VERSION[14]],
      params: new Map([[c.SetupParam.MaxRequestId, 1n << 20n]]),
    }, 14),
  );
  assert.equal((await next()).type, c.Msg.ServerSetup);
  const server = await serverP;
  assert.equal((await next()).type, c.Msg.SubscribeNamespace);
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    await send(
      c.Msg.Subscribe,
      c.encodeSubscribe({
        requestId: BigInt(i * 2),
        path: "feed",
        track: "t",
        priority: 0,
        groupOrder: 0,
        forward: true,
        filter: { kind: "absolute", startGroup: 0, startObject: 0 },
      }, 14),
    );
  }
  for (let oks = 0; oks < SUBSCRIPTIONS;) if ((await next()).type === c.Msg.SubscribeOk) oks++;
  return { pair, server };
}

// `GROUPS` live groups of one 1 KiB object each.
function liveTrack(): { track: TrackProducer; groups: LiveFrames[] } {
  const track = new TrackProducer({ cache: 32, cacheBytes: 1 << 30 });
  const groups: LiveFrames[] = [];
  for (let i = 0; i < GROUPS; i++) {
    const live = new LiveFrames(0n);
    live.push(new Uint8Array(KiB));
    track.writeGroup(i, live);
    groups.push(live);
  }
  return { track, groups };
}

// Each group grows by `FRAMES` objects of `FRAME` bytes, a turn of the event loop between them.
async function grow(groups: LiveFrames[]): Promise<void> {
  for (let f = 0; f < FRAMES; f++) {
    for (const live of groups) live.push(new Uint8Array(FRAME));
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

Deno.test("ietf: live groups that grow after their streams started count against the session's bound", async () => {
  const { track, groups } = liveTrack();
  const { pair, server } = await served(track);
  try {
    await until(
      () => server.stats.bytesSent >= SUBSCRIPTIONS * GROUPS * KiB,
      "every group's first object sent to every subscription",
    );
    // The group streams the subscriber sees, held (not read) so that none is collected.
    const seen: unknown[] = [];
    void (async () => {
      for (;;) {
        const stream = await pair.client.acceptUni().catch(() => undefined);
        if (!stream) return;
        seen.push(stream);
      }
    })();
    await until(() => seen.length === SUBSCRIPTIONS * GROUPS, "every group's stream seen");
    await grow(groups);
    await until(
      () => server.sendBytesInFlight > SESSION_BYTES_IN_FLIGHT - FRAME,
      "the session's bound reached",
    );
    // A next group, complete and as large as an object: past the bound it waits for room, as
    // the objects do, for each subscription.
    track.writeGroup(GROUPS, new Uint8Array(FRAME));
    // Every stream has written what it may (each object as it arrives, or waits).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const held = server.sendBytesInFlight;
    assert.ok(
      held <= HELD_BOUND,
      `the session holds ${(held / MiB).toFixed(0)} MiB in flight for a subscriber that reads ` +
        `nothing (bound ${(HELD_BOUND / MiB).toFixed(0)} MiB)`,
    );
    assert.equal(seen.length, SUBSCRIPTIONS * GROUPS, "no group started past the bound");
  } finally {
    for (const live of groups) live.finish();
    await pair.stop();
  }
});

Deno.test("ietf: a subscriber that reads one stream at a time, oldest first, gets every object while the others hold the session's bound", async () => {
  const { track, groups } = liveTrack();
  const { pair, server } = await served(track);
  try {
    // The slowest reader there is: the next stream is read only once the one before ended, so
    // a stream it reads that waited for room others hold would never end.
    const read = (async () => {
      let bytes = 0;
      for (let n = 0; n < SUBSCRIPTIONS * GROUPS; n++) {
        const stream = await pair.client.acceptUni();
        assert.ok(stream, "a group stream");
        for await (const chunk of stream.readable) bytes += chunk.length;
      }
      return bytes;
    })();
    await grow(groups);
    await until(
      () => server.sendBytesInFlight > SESSION_BYTES_IN_FLIGHT - FRAME,
      "the session's bound reached",
    );
    for (const live of groups) live.finish();
    const payload = SUBSCRIPTIONS * GROUPS * GROUP;
    // A stream it reads that waited for room the others hold would never end: fail, not hang.
    const bytes = await within(read, 60_000, "every stream read");
    assert.ok(bytes >= payload && bytes < payload + HEADERS, `read ${bytes} of ${payload} bytes`);
    await until(() => server.sendBytesInFlight === 0, "every stream's bytes given back");
  } finally {
    for (const live of groups) live.finish();
    await pair.stop();
  }
});
