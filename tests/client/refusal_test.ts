// What the application sees when a server refuses: a credential whose own
// scopes do not allow subscribing is refused before anything is dialed; a
// credential the relay refuses without the client being able to foresee it
// is confirmed over HTTP and reported as a refusal, not as "not found"
// (over native QUIC the refusal arrives as a bare end of stream); the
// moq-lite code of a refusal travels in the reset over WebSocket; and 20
// feeds on one relay share one session.
import assert from "node:assert/strict";
import {
  type Dialer,
  type FeedErrorEvent,
  HttpError,
  openFeed,
  post,
  RefusedError,
  SessionPool,
} from "../../src/client/mod.ts";
import { keySetText, makeKey } from "../support/credentials.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { quiet } from "../support/quiet.ts";
import { until, within } from "../support/wait.ts";
import { Reader } from "./_feed.ts";
import { startServers } from "./_servers.ts";

Deno.test("a credential whose scopes do not allow subscribing is refused before dialing", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true, auth: true });
  const track = s.track("refused");
  await post(track, { n: 0 }, { token: await s.token(["post"]) });
  // Reading history is allowed (fetch), subscribing is not.
  const fetchOnly = await s.token(["fetch"]);
  let calls = 0;
  const token = () => (calls++, fetchOnly);
  let dials = 0;
  const dial: Dialer = () => {
    dials++;
    return Promise.reject(new Error("not to be dialed"));
  };
  const gets: string[] = [];
  const counting: typeof fetch = (input, init) => {
    gets.push(String(input));
    return fetch(input, init);
  };
  const errors: FeedErrorEvent[] = [];
  const opened = Date.now();
  const feed = openFeed({
    track,
    moq: s.moqt, // native QUIC: the relay's refusal would arrive as a bare end of stream
    serverCertificateHashes: s.hashes,
    from: "start",
    token,
    dial,
    fetch: counting,
    sessions: new SessionPool(),
  });
  feed.addEventListener("error", (e) => errors.push(e as FeedErrorEvent));
  const reader = new Reader(feed);
  await assert.rejects(within(reader.done, 20_000, "the refusal"), RefusedError);
  console.log(
    `refused ${Date.now() - opened} ms after opening, ${dials} dials, ${gets.length} HTTP requests`,
  );
  assert.equal(feed.state, "closed");
  const refused = feed.error as RefusedError;
  assert.equal(refused.reason, "unauthorized");
  assert.match(refused.message, /does not allow subscribing to "refused" of "room\/1"/);
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["refused", true]]);
  assert.equal(dials, 0, "nothing was dialed");
  assert.ok(calls >= 2, `a fresh token was tried (${calls} calls)`);
});

Deno.test("a credential whose key is taken out of service mid-feed ends the feed as refused, never as not found", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true, auth: true });
  const track = s.track("rotated");
  await post(track, { n: 0 }, { token: await s.token(["post"]) });
  // A fixed token that allows all a feed needs, until its key is taken out of service.
  const token = await s.token(["fetch", "subscribe"]);
  const errors: FeedErrorEvent[] = [];
  const feed = openFeed({
    track,
    moq: s.moqt,
    serverCertificateHashes: s.hashes,
    from: "start",
    token,
    sessions: new SessionPool(),
  });
  feed.addEventListener("error", (e) => errors.push(e as FeedErrorEvent));
  const reader = new Reader(feed);
  // The feed ends with the refusal, possibly before the relay restart below: seen at the end.
  const ended = reader.done.catch(() => {});
  try {
    await reader.count(1);
    await reader.reaches("live");
    errors.length = 0; // a "not_found" before the funnel's broadcast reached the relay is fair
    // Both servers re-read the key set every second. The relay closes the session of a credential
    // it no longer trusts (code 6, a refusal); should the feed dial again after the restart, the
    // relay's "not found" over native QUIC is confirmed over HTTP, where the funnel says why.
    await Deno.writeTextFile(s.keysFile, keySetText(await makeKey()));
    await new Promise((r) => setTimeout(r, 2_500));
    await s.relay!.kill("SIGKILL");
    await s.relay!.start();
    await ended;
  } finally {
    feed.close();
  }
  // The relay's close (code 6), or whichever asks the funnel first: the long-poll or the check of
  // MoQ's "not found".
  const err = feed.error;
  console.log(`closed with ${String(err)}`);
  assert.ok(
    (err instanceof RefusedError && err.reason === "unauthorized") ||
      (err instanceof HttpError && err.status === 401),
    String(err),
  );
  assert.match(String(err), /no longer trusted|key that is not trusted|credential no longer valid/);
  assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["refused", true]], "never not_found");
});

for (const transport of ["wss", "moqt"] as const) {
  Deno.test(`a session the relay refuses (${transport}) closes the feed as refused, without the credential`, async () => {
    using _q = quiet();
    // The relay knows another key than the funnel: the client cannot foresee its refusal.
    const relayKeys = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(relayKeys, keySetText(await makeKey()));
    await using s = await startServers({
      relay: true,
      auth: true,
      relayEnv: { SLUICE_AUTH_KEYS: relayKeys },
    });
    const track = s.track("relay-refuses");
    const token = await s.token(["fetch", "subscribe"]);
    const errors: FeedErrorEvent[] = [];
    const feed = openFeed({
      track,
      // Over WebSocket the upgrade is refused (401); over QUIC the session closes with code 6.
      ...(transport === "wss"
        ? { moq: s.wss, caCerts: [s.certPem] }
        : { moq: s.moqt, serverCertificateHashes: s.hashes }),
      from: "start",
      token,
      sessions: new SessionPool(),
    });
    feed.addEventListener("error", (e) => errors.push(e as FeedErrorEvent));
    // Before, the refused session was dialed again for ever, the feed "connecting" without a word.
    await assert.rejects(within(new Reader(feed).done, 20_000, "the refusal"), RefusedError);
    const refused = feed.error as RefusedError;
    console.log(`${transport}: closed with ${String(refused)}`);
    assert.equal(refused.reason, "unauthorized");
    assert.deepEqual(errors.map((e) => [e.reason, e.fatal]), [["refused", true]]);
    // The refused URL carried the credential: the error does not.
    const said = `${refused.message} ${String(refused.cause ?? "")} ${refused.stack}`;
    assert.ok(!said.includes(token.split(".")[2]!), "no credential in the error");
    await Deno.remove(relayKeys);
  });
}

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
