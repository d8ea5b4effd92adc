// A token function that starts failing while the feed is live, on an
// injected clock: it is asked again with backoff (1 s doubling up to 30 s,
// full jitter), never in a loop, the feed stays live while its token is
// valid, and once the token has expired and the function failed
// TOKEN_ATTEMPTS times in a row the feed closes with a TokenError.
import assert from "node:assert/strict";
import {
  type FeedErrorEvent,
  openFeed,
  post,
  SessionPool,
  TOKEN_ATTEMPTS,
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
  const calls: number[] = [];
  const token = () => {
    calls.push(clock.now());
    if (failing) return Promise.reject(new Error("token backend down"));
    return Promise.resolve(fakeJwt(clock.now(), 600)); // renewed 60 s before its exp
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
  feed.addEventListener("error", (e) => errors.push(e as FeedErrorEvent));
  const reader = new Reader(feed);
  const ended = reader.done.then(() => undefined, (err: unknown) => err);
  await untilOnClock(clock, () => reader.records.length >= 1 && feed.state === "live", "live");
  failing = true;
  const start = clock.now();
  const first = calls.length;
  // To the renewal (540 s), then 30 s of failures.
  await advance(clock, 570_000, 500);
  const failed = calls.slice(first).map((t) => t - start - 540_000);
  const in10s = failed.filter((t) => t >= 0 && t < 10_000).length;
  const in30s = failed.filter((t) => t >= 0 && t < 30_000).length;
  console.log(`token calls after the first failure: ${in10s} in 10 s, ${in30s} in 30 s`);
  // Full jitter has no floor, so these bounds are loose; the loop this replaces made 4,300-4,600.
  assert.ok(in10s >= 1 && in10s <= 10, `${in10s} calls in 10 s`);
  assert.ok(in30s <= 12, `${in30s} calls in 30 s`);
  assert.deepEqual([feed.state, errors.length], ["live", 0], "the current token is still valid");
  // Past its exp, with the function still failing: the feed gives up and says why.
  const state = (): string => feed.state;
  for (let i = 0; i < 60 && state() !== "closed"; i++) await advance(clock, 30_000, 500);
  assert.ok(await ended instanceof TokenError, "the iteration throws the TokenError");
  assert.equal(state(), "closed");
  assert.ok((feed.error as TokenError).failures >= TOKEN_ATTEMPTS);
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["token", true]]);
});
