// 20 feeds while their relay is down, at the shipped defaults and in real
// time (the funnel's long-poll waits on its own clock): each follows its
// track with one parked long-poll at a time instead of reading the history
// on a timer, records posted meanwhile still arrive, in order, once each,
// and the funnel never warns about Deno's legacy request.signal. Before,
// each feed read the history about 4 times per 10 s (1 s doubling up to 5
// s) and a record waited for the next read.
import assert from "node:assert/strict";
import { openFeed, post, SessionPool } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { until } from "../support/wait.ts";
import { Reader } from "./_feed.ts";
import { advance, clockAtNow, untilOnClock } from "./_clock.ts";
import { startServers } from "./_servers.ts";

const FEEDS = 20;
const WINDOW_MS = 20_000;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

Deno.test("20 feeds with the relay down follow the funnel with one long-poll each", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true });
  const requests: { at: number; path: string }[] = [];
  const counting: typeof fetch = (input, init) => {
    requests.push({ at: Date.now(), path: new URL(input as string | URL).pathname });
    return fetch(input, init);
  };
  const sessions = new SessionPool();
  const tracks: string[] = [];
  const readers: Reader[] = [];
  for (let i = 0; i < FEEDS; i++) {
    const track = s.track(`outage-${i}`);
    tracks.push(track);
    await post(track, { n: 0 });
    readers.push(
      new Reader(openFeed({
        track,
        moq: s.moqt,
        serverCertificateHashes: s.hashes,
        from: "start",
        fetch: counting,
        sessions,
      })),
    );
  }
  try {
    await until(() => readers.every((r) => r.records.length >= 1), "a record each");
    await until(() => readers.every((r) => r.feed.state === "live"), "every feed live");
    await s.relay!.kill("SIGKILL");
    // The shared session's probe notices within 4.5 s.
    await until(() => readers.every((r) => r.feed.state === "connecting"), "every feed connecting");
    await new Promise((r) => setTimeout(r, 1_000)); // the reads after the loss are done
    const from = Date.now();
    const before = requests.length;
    // 20 s: the funnel's long-poll wait, so every feed parks again once.
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const quietWindow = requests.slice(before);
    const perFeed = quietWindow.length / FEEDS / (WINDOW_MS / 10_000);
    console.log(
      `relay down, ${FEEDS} feeds, ${WINDOW_MS / 1000} s with no records: ${quietWindow.length} ` +
        `requests (${perFeed.toFixed(2)} a feed per 10 s; ${
          quietWindow.filter((r) => r.path.startsWith("/v1/stream/")).length
        } long-polls)`,
    );
    // One long-poll parked for up to 20 s per feed; a timer-driven read alone was 4.1 a feed.
    assert.ok(perFeed <= 1, `${perFeed} requests a feed per 10 s`);
    assert.ok(Date.now() - from >= WINDOW_MS);

    // Records committed during the outage still arrive, soon after their commit.
    const latencies: number[] = [];
    await Promise.all(tracks.map(async (track, i) => {
      const sent = Date.now();
      const { group } = await post(track, { n: 1 });
      await readers[i]!.has(group);
      latencies.push(Date.now() - sent);
    }));
    console.log(
      `records posted during the outage: ${latencies.length}/${FEEDS} delivered, latency ` +
        `median ${median(latencies)} ms, max ${Math.max(...latencies)} ms`,
    );
    for (const r of readers) {
      assert.deepEqual(r.records.map((x) => x.payload), [{ n: 0 }, { n: 1 }], "in order, once");
      assert.equal(r.feed.state, "connecting");
    }
    const legacy = s.funnel.lines.filter((l) => l.includes("legacy behavior"));
    assert.deepEqual(legacy, [], "no legacy request.signal warning from the funnel");
  } finally {
    for (const r of readers) await r.close();
  }
});

// The same 20 feeds when the funnel goes down too, on an injected clock: the failing
// long-polls are retried after 1 s doubling up to 10 s with full jitter, not in a loop and
// not all together.
Deno.test("20 feeds with the relay and the funnel down retry the long-poll with backoff and jitter", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true });
  const clock = clockAtNow();
  const requests: number[] = [];
  const counting: typeof fetch = (input, init) => {
    requests.push(clock.now());
    return fetch(input, init);
  };
  const sessions = new SessionPool();
  const readers: Reader[] = [];
  for (let i = 0; i < FEEDS; i++) {
    const track = s.track(`down-${i}`);
    await post(track, { n: 0 });
    readers.push(
      new Reader(openFeed({
        track,
        moq: s.moqt,
        serverCertificateHashes: s.hashes,
        from: "start",
        fetch: counting,
        timers: clock,
        now: clock.now,
        sessions,
      })),
    );
  }
  try {
    await untilOnClock(
      clock,
      () => readers.every((r) => r.feed.state === "live"),
      "every feed live",
    );
    await s.funnel.kill("SIGKILL");
    await s.relay!.kill("SIGKILL");
    // The session's probe notices within 4.5 s; then the parked long-polls fail at once.
    await advance(clock, 6_000, 100, 2);
    await untilOnClock(
      clock,
      () => readers.every((r) => r.feed.state === "connecting"),
      "every feed connecting",
    );
    await advance(clock, 2_000, 50, 1);
    const from = clock.now();
    const before = requests.length;
    await advance(clock, 10_000, 50, 1);
    const times = requests.slice(before).map((t) => t - from);
    let crowd = 0;
    for (const t of times) {
      crowd = Math.max(
        crowd,
        times.filter((u) => u >= t && u < t + 250).length,
      );
    }
    console.log(
      `relay and funnel down, ${FEEDS} feeds, 10 s: ${times.length} requests ` +
        `(${(times.length / FEEDS).toFixed(1)} a feed), at most ${crowd} in any 250 ms`,
    );
    // 1 s doubling up to 10 s, full jitter: 2.5 a feed in runs (the timed reads before: 2.8);
    // a loop would be thousands.
    assert.ok(times.length / FEEDS <= 5, `${times.length} requests`);
    assert.ok(crowd < FEEDS, `${crowd} requests within 250 ms`);
  } finally {
    for (const r of readers) await r.close();
  }
});
