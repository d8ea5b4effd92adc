// A subscription to a track the funnel does not hold open costs a storage lookup, charged to
// the session's budget: one session naming fresh tracks as fast as it can (moq-lite or IETF)
// makes at most its burst of storage queries, is refused "too many" for the rest, keeps its
// session, and leaves another session's subscriptions working at once. The relay session has
// a budget of its own. The clock the lookups are budgeted by stands still, so the figures are
// exact: no token refills during the test.
import assert from "node:assert/strict";
import { type LedgerBackend, MemoryBackend } from "../../../src/ledger/mod.ts";
import { connectIetf, MoqError, type Subscription, TrackProducer } from "../../../src/moq/mod.ts";
import {
  RELAY_LOOKUP_LIMIT,
  SESSION_LOOKUP_LIMIT,
} from "../../../src/funnel/live/track_lookups.ts";
import { connectQuicSession, StreamError } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";

/** A memory backend counting the storage lookups (opens without create). */
function countingLookups(): { backend: LedgerBackend; lookups: () => number } {
  const inner = new MemoryBackend();
  let lookups = 0;
  return {
    lookups: () => lookups,
    backend: {
      name: inner.name,
      listTracks: () => inner.listTracks(),
      close: () => inner.close(),
      openTrack: (path, create) => {
        if (!create) lookups++;
        return inner.openTrack(path, create);
      },
    },
  };
}

const FRESH = 2000;
const BATCH = 100;

/** Subscribes to FRESH made-up tracks, BATCH at once; how each refusal was told, counted. */
async function flood(subscribe: (i: number) => Promise<unknown>): Promise<Map<string, number>> {
  const told = new Map<string, number>();
  for (let i = 0; i < FRESH; i += BATCH) {
    await Promise.all(Array.from({ length: BATCH }, async (_, j) => {
      const why = await subscribe(i + j).then(() => "served", (e) => kindOf(e));
      told.set(why, (told.get(why) ?? 0) + 1);
    }));
  }
  return told;
}

function kindOf(e: unknown): string {
  if (!(e instanceof MoqError)) return `other: ${e}`;
  // moq-lite over WebSocket: the reset code says why (11: a limit was exceeded).
  if (e.cause instanceof StreamError) return `${e.code} ${e.cause.wireCode}`;
  // IETF: REQUEST_ERROR's code ends the message.
  return `${e.code} ${/\((\d+)\)$/.exec(e.message)?.[1] ?? e.message}`;
}

async function metric(base: string, limit: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) =>
    l.startsWith(`sluice_funnel_track_lookups_limited_total{limit="${limit}"}`)
  );
  return Number(line?.split(" ")[1] ?? 0);
}

const ready = (sub: Subscription): Promise<unknown> => within(sub.ready, 10_000, "an answer");

Deno.test("moq-lite: a session subscribing to 2,000 fresh tracks makes its burst of storage lookups and is refused the rest; it and another session are still served", async () => {
  using _q = quiet();
  const { backend, lookups } = countingLookups();
  const now = Date.now();
  await using f = await startLiveFunnel({}, { backend, now: () => now });
  assert.equal((await post(f.base, "real/t", "1")).status, 201);
  const before = lookups();
  // WebSocket carries the reset code (native QUIC resets with a bare FIN).
  const flooder = await dialOurs(f.moqPort, { webSocket: ["qmux-02"] });
  const honest = await dialOurs(f.moqPort);
  try {
    const told = await flood((i) => ready(flooder.subscribe("fresh", `t${i}`)));
    const burst = SESSION_LOOKUP_LIMIT.burst;
    assert.equal(lookups() - before, burst, "one storage lookup per token, none past them");
    assert.deepEqual(
      Object.fromEntries(told),
      { "not_found 13": burst, "refused 11": FRESH - burst },
      "not found while the budget lasts, then refused as over a limit",
    );
    assert.equal(await metric(f.base, "session"), FRESH - burst);
    // A name already looked up is remembered missing: answered without a token, as not found.
    await assert.rejects(ready(flooder.subscribe("fresh", "t0")), { code: "not_found" });
    // Open tracks cost no lookup: the flooding session is still served, and so is another.
    assert.deepEqual(await take(flooder.subscribe("real", "t"), 1), [
      { seq: 1, frame: '{"payload":1}' },
    ]);
    assert.deepEqual(await take(honest.subscribe("real", "t"), 1), [
      { seq: 1, frame: '{"payload":1}' },
    ]);
    // The other session's budget is its own: a name it is the first to ask about is looked up.
    const asked = lookups();
    await assert.rejects(ready(honest.subscribe("fresh", "other")), MoqError);
    assert.equal(lookups(), asked + 1);
  } finally {
    flooder.close(0, "");
    honest.close(0, "");
  }
});

Deno.test("IETF draft 20: a session subscribing to 2,000 fresh tracks is refused EXCESSIVE_LOAD past its burst; FETCH too; the relay session's budget is its own", async () => {
  using _q = quiet();
  const { backend, lookups } = countingLookups();
  const now = Date.now();
  await using f = await startLiveFunnel({}, { backend, now: () => now });
  assert.equal((await post(f.base, "real/t", "1")).status, 201);
  const cert = await testCertificate();
  const transport = await connectQuicSession(new URL(`moqt://localhost:${f.moqPort}/`), {
    alpn: ["moqt-20"],
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
  const ietf = await connectIetf(transport, 20);
  const honest = await dialOurs(f.moqPort);
  try {
    const before = lookups();
    const told = await flood((i) => ready(ietf.subscribe("fresh", `t${i}`)));
    const burst = SESSION_LOOKUP_LIMIT.burst;
    assert.equal(lookups() - before, burst);
    // 0x10: DOES_NOT_EXIST; 0x9: EXCESSIVE_LOAD.
    assert.deepEqual(Object.fromEntries(told), {
      "not_found 16": burst,
      "not_found 9": FRESH - burst,
    });
    await assert.rejects(ietf.fetch("fresh", "another", 0), /\b9\b|too many/);
    assert.equal(lookups() - before, burst);
    // Served still: the open track on this session, and another session's subscription.
    const sub = ietf.subscribe("real", "t");
    await ready(sub);
    assert.deepEqual(await take(honest.subscribe("real", "t"), 1), [
      { seq: 1, frame: '{"payload":1}' },
    ]);
    // The relay session (whose publisher serves here) looks up on its own budget.
    const { publisher } = f.funnel.live;
    const asked = lookups();
    for (let i = 0; i < RELAY_LOOKUP_LIMIT.burst; i++) {
      assert.equal(
        await publisher.serve({ kind: "subscribe", path: "relayed", track: `t${i}` }),
        "not_found",
      );
    }
    assert.equal(lookups() - asked, RELAY_LOOKUP_LIMIT.burst);
    assert.equal(
      await publisher.serve({ kind: "subscribe", path: "relayed", track: "one more" }),
      "too_many",
    );
    assert.ok(
      await publisher.serve({ kind: "subscribe", path: "real", track: "t" }) instanceof
        TrackProducer,
    );
    assert.equal(await metric(f.base, "relay"), 1);
  } finally {
    ietf.close();
    honest.close(0, "");
  }
});

Deno.test("through a relay, subscribers naming more fresh tracks than a client's burst are all looked up: the relay session's budget is its own", async () => {
  using _q = quiet();
  const { backend, lookups } = countingLookups();
  const now = Date.now();
  const relay = await startTestRelay();
  const files = await testCertificateFiles();
  const f = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
  }, { backend, now: () => now });
  const subscriber = await dialOurs(relay.port);
  try {
    await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
    // The relay forwards a subscription only under a broadcast the funnel announced.
    assert.equal((await post(f.base, "fresh/real", "1")).status, 201);
    await within(seeAnnounced(subscriber, "fresh"), 10_000, "the broadcast at the relay");
    const before = lookups();
    const names = 3 * SESSION_LOOKUP_LIMIT.burst;
    for (let i = 0; i < names; i += BATCH) {
      await Promise.all(
        Array.from(
          { length: Math.min(BATCH, names - i) },
          (_, j) => assert.rejects(ready(subscriber.subscribe("fresh", `t${i + j}`))),
        ),
      );
    }
    assert.equal(lookups() - before, names, "each fresh name looked up once");
    assert.equal(await metric(f.base, "relay"), 0);
    assert.deepEqual(await take(subscriber.subscribe("fresh", "real"), 1), [
      { seq: 1, frame: '{"payload":1}' },
    ]);
  } finally {
    subscriber.close(0, "");
    await f[Symbol.asyncDispose]();
    await relay.stop();
  }
});
