// Repair over MoQ from the ledger, and commit times that travel live: a FETCH of any recorded
// group is answered (from the own listener's worker, from the relay session, and through a
// relay that forwards it upstream), every frame timestamp is the record's wallclock in
// nanoseconds, exactly, and a redacted record is served as stored.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { MoqError, type MoqSession, type ReceivedGroup } from "../../../src/moq/mod.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialNet, dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { type LiveFunnel, send, startLiveFunnel } from "../../support/live_funnel.ts";

const decoder = new TextDecoder();
const RECORDS = 120; // more than the worker's 64 and the relay session's 32 recent groups
const NS = 1_000_000_000;

interface Posted {
  readonly group: string;
  readonly wallclock: bigint;
}

/** Posts RECORDS records `{"n":i}`; returns each one's group and exact wallclock. */
async function postRecords(base: string): Promise<Posted[]> {
  const out: Posted[] = [];
  for (let n = 0; n < RECORDS; n++) {
    const response = await fetch(`${base}/tracks/room/1/chat`, {
      method: "POST",
      body: JSON.stringify({ n }),
    });
    const text = await response.text();
    assert.equal(response.status, 201, text);
    out.push({
      group: JSON.parse(text).group,
      wallclock: BigInt(/"wallclock":(\d+)/.exec(text)![1]!),
    });
  }
  return out;
}

const frameOf = (group: ReceivedGroup) => decoder.decode(group.frames[0]);

async function assertNotFound(moq: MoqSession, sequence: number): Promise<void> {
  await assert.rejects(
    moq.fetch("room/1", "chat", sequence),
    (e) => e instanceof MoqError && e.code === "not_found",
    `group ${sequence} is not found`,
  );
}

/** Every recorded group, old and recent, fetched over `moq`, with its exact commit time. */
async function assertFetchesAll(moq: MoqSession, posted: readonly Posted[]): Promise<void> {
  for (const sequence of [1, 2, 30, 57, 90, RECORDS]) {
    const group = await moq.fetch("room/1", "chat", sequence);
    assert.equal(group.sequence, sequence);
    assert.equal(frameOf(group), `{"payload":{"n":${sequence - 1}}}`);
    assert.equal(group.exactTimestamp, posted[sequence - 1]!.wallclock, `group ${sequence}`);
  }
  // Many at once (a gap being repaired): all answered, in any order.
  const gap = Array.from({ length: 40 }, (_, i) => i + 3);
  const groups = await Promise.all(gap.map((s) => moq.fetch("room/1", "chat", s)));
  assert.deepEqual(groups.map(frameOf), gap.map((s) => `{"payload":{"n":${s - 1}}}`));
  await assertNotFound(moq, 0);
  await assertNotFound(moq, RECORDS + 1);
}

async function redactThird(f: LiveFunnel, posted: readonly Posted[]): Promise<void> {
  assert.equal(await send(f.base, "DELETE", `/tracks/room/1/chat?group=${posted[2]!.group}`), 201);
}

/** A funnel with a directory ledger (removed at disposal). */
async function fileFunnel(env: Record<string, string>): Promise<LiveFunnel> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-fetch-" });
  const f = await startLiveFunnel({ LEDGER_URI: `file://${dir}`, ...env });
  return {
    ...f,
    [Symbol.asyncDispose]: async () => {
      await f[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("Own listener: FETCH of any recorded group comes from the ledger, timestamps are exact ns wallclocks, a redacted record is served redacted", async () => {
  using _q = quiet();
  await using f = await fileFunnel({});
  const posted = await postRecords(f.base);
  const ours = await dialOurs(f.moqPort);
  const net = await dialNet(f.moqPort);
  try {
    const sub = ours.subscribe("room/1", "chat");
    await sub.ready;
    assert.equal(sub.info?.timescale, NS, "TRACK_INFO advertises nanoseconds");
    const it = sub[Symbol.asyncIterator]();
    const latest = (await it.next()).value!;
    assert.equal(latest.sequence, RECORDS);
    assert.equal(
      latest.exactTimestamp,
      posted[RECORDS - 1]!.wallclock,
      "live: the exact wallclock",
    );

    await assertFetchesAll(ours, posted);
    await redactThird(f, posted);
    const redacted = await ours.fetch("room/1", "chat", 3);
    assert.equal(frameOf(redacted), `{"redacted":true}`);
    assert.equal(redacted.exactTimestamp, posted[2]!.wallclock);
    const redaction = (await it.next()).value!;
    assert.equal(frameOf(redaction), `{"redacts":"${posted[2]!.group}"}`);

    // @moq/net fetches an old group too; it reads the timestamp as a number at scale 1e9.
    const old = await net.consume(Net.Path.from("room/1")).fetchGroup("chat", 10);
    const frame = await old.readFrame();
    assert.equal(decoder.decode(frame?.payload), `{"payload":{"n":9}}`);
    assert.equal(frame?.timestamp.scale, NS);
    assert.equal(frame?.timestamp.value, Number(posted[9]!.wallclock));
    await it.return?.();
  } finally {
    ours.close(0, "");
    net.close();
  }
});

Deno.test("Through a relay: FETCH past both rings is forwarded to the funnel's relay session and answered from the ledger", async () => {
  using _q = quiet();
  const relay = await startTestRelay({ cacheSize: 8 });
  const files = await testCertificateFiles();
  const f = await fileFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
  });
  const sessions: MoqSession[] = [];
  let net: Awaited<ReturnType<typeof dialNet>> | undefined;
  try {
    await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
    assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
    const subscriber = await dialOurs(relay.port);
    sessions.push(subscriber);
    await seeAnnounced(subscriber, "room/1");
    const sub = subscriber.subscribe("room/1", "chat");
    await sub.ready;
    assert.equal(sub.info?.timescale, NS, "the relay passes the track's timescale on");
    const posted = await postRecords(f.base);
    const it = sub[Symbol.asyncIterator]();
    const first = (await it.next()).value!;
    assert.equal(
      first.exactTimestamp,
      posted[first.sequence - 1]!.wallclock,
      "live through the relay",
    );

    await assertFetchesAll(subscriber, posted);
    // A session that never subscribed is served the same way.
    const fetchOnly = await dialOurs(relay.port);
    sessions.push(fetchOnly);
    await seeAnnounced(fetchOnly, "room/1");
    assert.equal(frameOf(await fetchOnly.fetch("room/1", "chat", 5)), `{"payload":{"n":4}}`);
    await redactThird(f, posted);
    assert.equal(frameOf(await fetchOnly.fetch("room/1", "chat", 3)), `{"redacted":true}`);

    net = await dialNet(relay.port);
    const old = await net.consume(Net.Path.from("room/1")).fetchGroup("chat", 7);
    const frame = await old.readFrame();
    assert.equal(decoder.decode(frame?.payload), `{"payload":{"n":6}}`);
    assert.equal(frame?.timestamp.value, Number(posted[6]!.wallclock));
    await it.return?.();
  } finally {
    for (const s of sessions) s.close(0, "");
    net?.close();
    await f[Symbol.asyncDispose]();
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
});
