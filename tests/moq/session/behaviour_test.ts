import assert from "node:assert/strict";
import { accept, Announcer, connect, MoqError, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until } from "../../support/wait.ts";

const t = (s: string) => new TextEncoder().encode(s);
const s = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

async function moqPair(version: string, serverTrack?: TrackProducer, announcer?: Announcer) {
  const pair = await quicPair(version);
  const serverP = accept(pair.server, {
    serve: (r) => serverTrack && r.path === "a/b" && r.track === "t" ? serverTrack : "not_found",
    ...(announcer ? { announcer } : {}),
    acceptAnnounce: (p) => !p.startsWith("forbidden"),
  });
  const client = await connect(pair.client);
  const server = await serverP;
  return { client, server, stop: pair.stop };
}

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version}: a subscription to a track with no group yet waits for the first`, async () => {
    const track = new TrackProducer();
    const { client, stop } = await moqPair(version, track);
    const sub = client.subscribe("a/b", "t");
    await sub.ready;
    assert.equal(track.latest, undefined);
    const it = sub[Symbol.asyncIterator]();
    const next = it.next();
    track.writeGroup(7, [t("x"), t("y")], { timestamp: 1234 });
    const first = await next;
    assert.equal(first.done, false);
    assert.equal(first.value?.sequence, 7);
    assert.deepEqual(first.value?.frames.map(s), ["x", "y"]);
    assert.equal(first.value?.timestamp, version === "moq-lite-05" ? 1234 : 0);
    await it.return?.();
    await stop();
  });

  Deno.test(`${version}: nanosecond timestamps arrive exactly, live and by fetch`, async () => {
    const track = new TrackProducer({ timescale: 1_000_000_000 });
    const wallclock = 1_800_000_000_123_456_789n;
    const { client, stop } = await moqPair(version, track);
    const sub = client.subscribe("a/b", "t");
    await sub.ready;
    if (version === "moq-lite-05") assert.equal(sub.info?.timescale, 1_000_000_000);
    const it = sub[Symbol.asyncIterator]();
    const next = it.next();
    track.writeGroup(3, t("x"), { timestamp: wallclock });
    const live = (await next).value!;
    const fetched = await client.fetch("a/b", "t", 3);
    const expected = version === "moq-lite-05" ? wallclock : 0n;
    assert.equal(live.exactTimestamp, expected);
    assert.equal(fetched.exactTimestamp, expected);
    assert.equal(live.timestamp, Number(expected));
    assert.throws(() => track.writeGroup(4, t("y"), { timestamp: 1n << 61n }), RangeError);
    assert.throws(() => track.writeGroup(4, t("y"), { timestamp: 1.5 }), RangeError);
    await it.return?.();
    await stop();
  });

  Deno.test(`${version}: fetch returns a cached group; a missing one is not_found`, async () => {
    const track = new TrackProducer({ cache: 4 });
    for (let i = 1; i <= 6; i++) track.writeGroup(i, t(`g${i}`));
    const { client, stop } = await moqPair(version, track);
    const g = await client.fetch("/a/b", "t", 5);
    assert.equal(g.sequence, 5);
    assert.equal(s(g.frames[0]), "g5");
    await assert.rejects(
      client.fetch("a/b", "t", 1),
      (e) => e instanceof MoqError && e.code === "not_found",
    );
    await assert.rejects(client.fetch("a/zz", "t", 5), MoqError);
    await stop();
  });

  Deno.test(`${version}: fetch falls back to the producer's fetchMissing for groups it no longer holds`, async () => {
    // The failing fetchMissing is logged (once per session) through the default log.
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (line: string) => warnings.push(line);
    using _restore = { [Symbol.dispose]: () => void (console.warn = warn) };
    const asked: number[] = [];
    const track = new TrackProducer({
      cache: 2,
      timescale: 1_000_000_000,
      fetchMissing: (sequence) => {
        asked.push(sequence);
        if (sequence === 13) return Promise.reject(new Error("storage away"));
        if (sequence > 6) return Promise.resolve(undefined);
        return Promise.resolve({ frames: [t(`old${sequence}`)], timestamp: 10n ** 18n + 7n });
      },
    });
    for (let i = 1; i <= 6; i++) track.writeGroup(i, t(`g${i}`));
    const { client, stop } = await moqPair(version, track);
    const cached = await client.fetch("a/b", "t", 6);
    assert.equal(s(cached.frames[0]), "g6");
    const old = await client.fetch("a/b", "t", 2);
    assert.equal(s(old.frames[0]), "old2");
    assert.equal(old.exactTimestamp, version === "moq-lite-05" ? 10n ** 18n + 7n : 0n);
    assert.deepEqual(asked, [2], "a cached group never reaches fetchMissing");
    for (const missing of [9, 13]) {
      await assert.rejects(
        client.fetch("a/b", "t", missing),
        (e) => e instanceof MoqError && e.code === "not_found",
      );
    }
    // A failing fetchMissing refuses that FETCH only: the session goes on serving.
    assert.equal(s((await client.fetch("a/b", "t", 3)).frames[0]), "old3");
    assert.equal(track.cached, 2, "fetched groups do not enter the cache");
    assert.ok(
      warnings.some((w) => w.includes("fetching group 13 failed: storage away")),
      warnings.join("\n"),
    );
    await stop();
  });

  Deno.test(`${version}: abort ends a subscription; the publisher sees it closed`, async () => {
    const track = new TrackProducer();
    track.writeGroup(1, t("1"));
    const { client, server, stop } = await moqPair(version, track);
    const ac = new AbortController();
    const got: number[] = [];
    for await (const g of client.subscribe("a/b", "t", { signal: ac.signal })) {
      got.push(g.sequence);
      ac.abort();
    }
    assert.deepEqual(got, [1]);
    await until(() => server.stats.subscriptionsClosed >= 1, "the subscription closed");
    assert.equal(server.stats.subscriptionsOpened, 1);
    assert.equal(track.subscribers, 0);
    assert.equal(client.stats.upstreamSubscriptionsClosed, 1);
    await stop();
  });

  Deno.test(`${version}: a subscriber that falls behind skips ahead; the writer never waits`, async () => {
    const track = new TrackProducer({ cache: 64 });
    track.writeGroup(0, t("0"));
    const { client, server, stop } = await moqPair(version, track);
    const sub = client.subscribe("a/b", "t");
    const it = sub[Symbol.asyncIterator]();
    assert.equal((await it.next()).value?.sequence, 0);
    // 500 groups written synchronously: far more than the 16-group queue per subscriber.
    for (let i = 1; i <= 500; i++) track.writeGroup(i, t(`${i}`));
    let last = 0;
    let count = 0;
    while (last < 500) {
      const r = await it.next();
      assert.equal(r.done, false);
      assert.ok(r.value!.sequence > last, "groups only move forward");
      last = r.value!.sequence;
      count++;
    }
    assert.ok(count < 500, `received ${count}`);
    assert.ok(server.stats.groupsSkipped > 0);
    assert.equal(server.stats.groupsSkipped + server.stats.groupsSent, 501);
    await it.return?.();
    await stop();
  });

  Deno.test(`${version}: a subscription with an end group finishes there`, async () => {
    const track = new TrackProducer({ cache: 16 });
    for (let i = 1; i <= 10; i++) track.writeGroup(i, t(`${i}`));
    const { client, stop } = await moqPair(version, track);
    const got: number[] = [];
    for await (const g of client.subscribe("a/b", "t", { start: 3, end: 5 })) got.push(g.sequence);
    assert.deepEqual(got.sort((a, b) => a - b), [3, 4, 5]);
    await stop();
  });

  Deno.test(`${version}: SUBSCRIBE_UPDATE with an end group finishes the subscription`, async () => {
    const track = new TrackProducer({ cache: 16 });
    track.writeGroup(1, t("1"));
    const { client, stop } = await moqPair(version, track);
    const sub = client.subscribe("a/b", "t");
    const got: number[] = [];
    for await (const g of sub) {
      got.push(g.sequence);
      if (g.sequence === 1) {
        await sub.update({ end: 3, priority: 9 });
        for (let i = 2; i <= 6; i++) track.writeGroup(i, t(`${i}`));
      }
    }
    assert.deepEqual(got.sort((a, b) => a - b), [1, 2, 3]);
    await stop();
  });

  Deno.test(`${version}: announcements: snapshot, live, withdraw, refusal, loops`, async () => {
    const shared = new Announcer();
    shared.announce("/live/one");
    const { client, server, stop } = await moqPair(version, undefined, shared);
    const events: string[] = [];
    const ac = new AbortController();
    const watching = (async () => {
      for await (const e of client.announced("/live/", { signal: ac.signal })) {
        events.push(`${e.active ? "+" : "-"}${e.path}`);
        if (events.length === 1) {
          const two = shared.announce("live/two");
          shared.announce("other/three"); // outside the prefix
          two.withdraw();
        }
        if (events.length === 3) ac.abort();
      }
    })();
    await watching;
    assert.deepEqual(events, ["+live/one", "+live/two", "-live/two"]);
    // The server refuses the client's "forbidden/..." announcement but accepts others.
    client.announce("forbidden/x");
    client.announce("fine/y");
    const seen: string[] = [];
    const ac2 = new AbortController();
    for await (const e of server.announced("", { signal: ac2.signal })) {
      seen.push(e.path);
      ac2.abort();
    }
    assert.deepEqual(seen, ["fine/y"]);
    assert.equal(server.stats.announcementsRefused, 1);
    await stop();
  });

  Deno.test(`${version}: goaway reaches the peer; closing ends subscriptions with an error`, async () => {
    const track = new TrackProducer();
    const { client, server, stop } = await moqPair(version, track);
    await server.sendGoaway("moqt://elsewhere:4443/");
    assert.equal(await client.goaway, "moqt://elsewhere:4443/");
    const sub = client.subscribe("a/b", "t");
    await sub.ready;
    server.close(25, "bye");
    await assert.rejects(async () => {
      for await (const _ of sub) { /* none */ }
    }, (e) => e instanceof MoqError && e.code === "closed");
    assert.equal((await client.closed).code, 25);
    await stop();
  });
}

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version}: a SUBSCRIBE refused after TRACK succeeded fails the subscription`, async () => {
    const track = new TrackProducer();
    const pair = await quicPair(version);
    const serverP = accept(pair.server, {
      serve: (r) => r.kind === "subscribe" ? "unauthorized" : track,
    });
    const client = await connect(pair.client);
    const server = await serverP;
    await assert.rejects(async () => {
      for await (const _ of client.subscribe("a", "t")) { /* none */ }
    }, (e) => e instanceof MoqError && e.code === "refused");
    assert.equal(server.stats.subscribeErrors.get("unauthorized"), 1);
    await pair.stop();
  });
}

Deno.test("moq-lite-05: many subscribe/cancel cycles leave nothing behind", async () => {
  const track = new TrackProducer();
  track.writeGroup(1, t("x"));
  const { client, server, stop } = await moqPair("moq-lite-05", track);
  for (let i = 0; i < 200; i++) {
    const ac = new AbortController();
    for await (const _ of client.subscribe("a/b", "t", { signal: ac.signal })) ac.abort();
  }
  await until(() => server.stats.subscriptionsClosed >= 200, "the 200 subscriptions closed");
  assert.equal(server.stats.subscriptionsOpened, 200);
  assert.equal(track.subscribers, 0);
  assert.equal(client.stats.upstreamSubscriptionsOpened, 200);
  assert.equal(client.stats.upstreamSubscriptionsClosed, 200);
  assert.equal(server.stats.protocolErrors + client.stats.protocolErrors, 0);
  await stop();
});
