// 20 feeds while their relay is down, on an injected clock: each polls the
// funnel's history with backoff and full jitter (1 s doubling up to 5 s),
// so they neither hammer the funnel nor arrive together. Before, each read
// once a second, all 20 within the same 250 ms.
import assert from "node:assert/strict";
import { openFeed, post, SessionPool } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { Reader } from "./_feed.ts";
import { advance, clockAtNow, untilOnClock } from "./_clock.ts";
import { startServers } from "./_servers.ts";

const FEEDS = 20;

Deno.test("20 feeds with the relay down poll the funnel with backoff and jitter", async () => {
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
    const track = s.track(`outage-${i}`);
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
    await untilOnClock(clock, () => readers.every((r) => r.records.length >= 1), "a record each");
    await untilOnClock(
      clock,
      () => readers.every((r) => r.feed.state === "live"),
      "every feed live",
    );
    await s.relay!.kill("SIGKILL");
    // The session's probe notices within 4.5 s; then give every feed a moment to lose its link.
    await advance(clock, 6_000, 100, 2);
    await untilOnClock(
      clock,
      () => readers.every((r) => r.feed.state === "connecting"),
      "every feed connecting",
    );
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
    const perSecond = times.length / 10;
    console.log(
      `relay down, ${FEEDS} feeds, 10 s: ${times.length} requests (${perSecond}/s, ` +
        `${(times.length / FEEDS).toFixed(1)} a feed), at most ${crowd} in any 250 ms`,
    );
    assert.ok(times.length < FEEDS * 10 / 2, `${times.length} requests (was ${FEEDS * 10})`);
    assert.ok(crowd < FEEDS, `${crowd} requests within 250 ms (was all ${FEEDS})`);
  } finally {
    for (const r of readers) await r.close();
  }
});
