// A token function that starts failing while the feed is live, on an
// injected clock: it is asked again with backoff (1 s doubling up to 30 s,
// full jitter), never in a loop; the first failure is an `error` event at
// once (not fatal: the feed stays live while its token is valid), and the
// feed closes with a TokenError once the token is past its exp plus the
// servers' 60 s leeway. Before, the feed said nothing and stayed live until
// TOKEN_ATTEMPTS (6) calls had failed after the exp, however long that took.
import assert from "node:assert/strict";
import {
  type FeedErrorEvent,
  openFeed,
  post,
  SessionPool,
  TokenError,
} from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { Reader } from "./_feed.ts";
import { advance, clockAtNow, untilOnClock } from "./_clock.ts";
import { startServers } from "./_servers.ts";

/** An unsigned JWT-shaped token with `iat` and `exp` (the funnel runs without auth). */
function fakeJwt(nowMs: number, ttlSeconds: number): string {
  const b64 = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "");
  const iat = Math.floor(nowMs / 1000);
  return `${b64({ alg: "none" })}.${b64({ iat, exp: iat + ttlSeconds })}.x`;
}

Deno.test("a failing token function is asked again with backoff; the feed closes once its token expired", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("token-fails");
  await post(track, { n: 0 });
  const clock = clockAtNow();
  let failing = false;
  let expMs = 0;
  const calls: number[] = [];
  const token = () => {
    calls.push(clock.now());
    if (failing) return Promise.reject(new Error("token backend down"));
    const jwt = fakeJwt(clock.now(), 600); // renewed 60 s before its exp
    expMs = (Math.floor(clock.now() / 1000) + 600) * 1000;
    return Promise.resolve(jwt);
  };
  const errors: FeedErrorEvent[] = [];
  const feed = openFeed({
    track,
    moq: s.moqt,
    serverCertificateHashes: s.hashes,
    from: "start",
    token,
    timers: clock,
    now: clock.now,
    sessions: new SessionPool(),
  });
  const errorsAt: number[] = [];
  feed.addEventListener("error", (e) => {
    errors.push(e as FeedErrorEvent);
    errorsAt.push(clock.now());
  });
  const reader = new Reader(feed);
  const ended = reader.done.then(() => undefined, (err: unknown) => err);
  await untilOnClock(clock, () => reader.records.length >= 1 && feed.state === "live", "live");
  failing = true;
  const first = calls.length;
  const exp = expMs;
  const renewal = exp - 60_000;
  // To the renewal (540 s), then 30 s of failures.
  await advance(clock, renewal + 30_000 - clock.now(), 500);
  const failed = calls.slice(first).map((t) => t - renewal);
  const in10s = failed.filter((t) => t >= 0 && t < 10_000).length;
  const in30s = failed.filter((t) => t >= 0 && t < 30_000).length;
  console.log(`token calls after the first failure: ${in10s} in 10 s, ${in30s} in 30 s`);
  // Full jitter has no floor, so these bounds are loose; the loop this replaces made 4,300-4,600.
  assert.ok(in10s >= 1 && in10s <= 10, `${in10s} calls in 10 s`);
  assert.ok(in30s <= 12, `${in30s} calls in 30 s`);
  // Shown at the first failed call, and only once, while the feed stays live.
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["token", false]]);
  const shownAfter = errorsAt[0]! - calls[first]!;
  console.log(`first error event ${shownAfter} ms (clock) after the first failed call`);
  assert.equal(shownAfter, 0);
  assert.ok(errors[0]!.error instanceof TokenError);
  assert.equal(feed.state, "live", "the current token is still valid");
  // Past its exp, with the function still failing: the feed gives up and says why.
  const state = (): string => feed.state;
  await advance(clock, exp - clock.now() + 59_000, 500);
  assert.equal(state(), "live", "within the servers' leeway the token still works");
  for (let i = 0; i < 40 && state() !== "closed"; i++) await advance(clock, 100, 100);
  const closedAfterExp = clock.now() - exp;
  console.log(`TokenError ${closedAfterExp} ms (clock) after the token's exp`);
  assert.ok(await ended instanceof TokenError, "the iteration throws the TokenError");
  assert.equal(state(), "closed");
  assert.ok(closedAfterExp >= 60_000 && closedAfterExp <= 61_000, `${closedAfterExp} ms`);
  assert.ok((feed.error as TokenError).final);
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["token", false], ["token", true]]);
});
