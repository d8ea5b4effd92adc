// What the application sees when a server refuses: a relay that refuses the
// feed's credential over MoQ closes the feed with a RefusedError (the
// moq-lite code travels in the reset over WebSocket), and 20 feeds on one
// relay share one session.
import assert from "node:assert/strict";
import {
  type FeedErrorEvent,
  openFeed,
  post,
  RefusedError,
  SessionPool,
} from "../../src/client/mod.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { quiet } from "../support/quiet.ts";
import { until } from "../support/wait.ts";
import { Reader } from "./_feed.ts";
import { startServers } from "./_servers.ts";

Deno.test("a credential the relay refuses over MoQ closes the feed with the refusal's reason", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true, auth: true });
  const track = s.track("refused");
  await post(track, { n: 0 }, { token: await s.token(["post"]) });
  // Reading history is allowed (fetch), subscribing is not.
  const fetchOnly = await s.token(["fetch"]);
  let calls = 0;
  const token = () => (calls++, fetchOnly);
  const errors: FeedErrorEvent[] = [];
  const feed = openFeed({
    track,
    moq: s.wss, // QMux carries the reset's code; Deno's QUIC cannot send one
    caCerts: [s.certPem],
    from: "start",
    token,
    sessions: new SessionPool(),
  });
  feed.addEventListener("error", (e) => errors.push(e as FeedErrorEvent));
  const reader = new Reader(feed);
  await assert.rejects(reader.done, RefusedError);
  assert.equal(feed.state, "closed");
  assert.ok(feed.error instanceof RefusedError);
  assert.equal((feed.error as RefusedError).reason, "unauthorized");
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["refused", true]]);
  // The history it could read arrived first; a fresh token was asked for before giving up.
  assert.deepEqual(reader.records.map((r) => r.payload), [{ n: 0 }]);
  assert.ok(calls >= 2, `a fresh token was tried (${calls} calls)`);
});

Deno.test("20 feeds on one relay share one MoQ session, closed with the last feed", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true });
  const http = Deno.createHttpClient({ caCerts: [s.certPem] });
  const active = async () => {
    const r = await fetch(`${s.https}metrics`, { client: http });
    return sampleValue(families(await r.text()), "sluice_relay_sessions_active") ?? 0;
  };
  const tracks = [...Array(20).keys()].map((i) => s.track(`shared-${i}`));
  for (const t of tracks) await post(t, { n: 0 });
  const before = await active(); // the funnel's own session
  const sessions = new SessionPool();
  const readers = tracks.map((track) =>
    new Reader(
      openFeed({ track, moq: s.moqt, serverCertificateHashes: s.hashes, from: "start", sessions }),
    )
  );
  try {
    for (const r of readers) await r.reaches("live");
    for (const r of readers) await r.count(1);
    assert.equal(sessions.size, 1);
    const during = await active();
    console.log(`relay sessions_active: ${before} before, ${during} with 20 feeds open`);
    assert.equal(during, before + 1);
  } finally {
    for (const r of readers) await r.close();
  }
  await until(() => sessions.size === 0, "the shared session to close");
  await until(async () => (await active()) === before, "the relay to see it go");
  http.close();
});
