// Subscriber admission on the funnel's own MoQ listener: the same key set
// and credentials as the HTTP API (fetch or subscribe scopes), WebTransport
// refused before it is accepted, native QUIC closed with the unauthorized
// code, and CORS_ALLOWED_ORIGINS applied to WebTransport's Origin.
import assert from "node:assert/strict";
import {
  createVerifier,
  MemoryKeySource,
  signToken,
  type TokenClaims,
} from "../../../src/auth/mod.ts";
import { MoqCode, MoqError } from "../../../src/moq/mod.ts";
import { WebTransportRefusedError } from "../../../src/transport/mod.ts";
import { keySetOf, makeKey, type TestKey } from "../../support/credentials.ts";
import { dialOurs } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";

async function authFunnel(key: TestKey, env: Record<string, string> = {}) {
  const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)));
  return await startLiveFunnel(env, { verifier });
}

function token(key: TestKey, claims: TokenClaims): Promise<string> {
  return signToken(key.privateJwk, claims, { ttlSeconds: 600 });
}

async function refusedStatus(promise: Promise<unknown>): Promise<number> {
  try {
    const moq = await promise;
    (moq as { close(c: number, r: string): void }).close(0, "");
  } catch (error) {
    if (error instanceof WebTransportRefusedError) return error.status;
    throw error;
  }
  return 200;
}

Deno.test("With a key set, subscribers need a fetch or subscribe credential; each track is checked against its scope", async () => {
  using _q = quiet();
  const key = await makeKey();
  await using f = await authFunnel(key);
  const poster = await token(key, {
    sub: "alice",
    scopes: [{ actions: ["post"], broadcast: { prefix: "room" } }],
  });
  await post(f.base, "room/1/chat", '"hi"', poster);
  await post(f.base, "room/1/other", '"x"', poster);

  const chatOnly = await token(key, {
    scopes: [{ actions: ["subscribe"], broadcast: { exact: "room/1" }, track: { exact: "chat" } }],
  });
  const fetcher = await token(key, {
    scopes: [{ actions: ["fetch"], broadcast: { prefix: "room" } }],
  });

  // Native QUIC: the URL arrives in SETUP; no credential closes the session as unauthorized.
  const anonymous = await dialOurs(f.moqPort);
  assert.equal((await anonymous.closed).code, MoqCode.Unauthorized);
  const wrongScope = await dialOurs(f.moqPort, { jwt: poster });
  assert.equal((await wrongScope.closed).code, MoqCode.Unauthorized);
  const garbage = await dialOurs(f.moqPort, { jwt: "not.a.jwt" });
  assert.equal((await garbage.closed).code, MoqCode.Unauthorized);

  // WebTransport: refused with an HTTP status before the session exists.
  assert.equal(await refusedStatus(dialOurs(f.moqPort, { webTransport: true })), 401);
  assert.equal(await refusedStatus(dialOurs(f.moqPort, { webTransport: true, jwt: "x.y.z" })), 401);
  assert.equal(await refusedStatus(dialOurs(f.moqPort, { webTransport: true, jwt: poster })), 403);

  for (const webTransport of [false, true]) {
    const narrow = await dialOurs(f.moqPort, { jwt: chatOnly, webTransport });
    const wide = await dialOurs(f.moqPort, { jwt: fetcher, webTransport });
    try {
      const sub = narrow.subscribe("room/1", "chat");
      assert.deepEqual(await take(sub, 1), [{
        seq: 1,
        frame: '{"sender":"alice","payload":"hi"}',
      }]);
      const denied = narrow.subscribe("room/1", "other");
      await assert.rejects(denied.ready, (e: unknown) => e instanceof MoqError);
      const other = wide.subscribe("room/1", "other");
      assert.deepEqual(await take(other, 1), [{
        seq: 1,
        frame: '{"sender":"alice","payload":"x"}',
      }]);
    } finally {
      narrow.close(0, "");
      wide.close(0, "");
    }
  }
});

Deno.test("WebTransport Origin: only CORS_ALLOWED_ORIGINS (or the listener's own origin) may open a session", async () => {
  using _q = quiet();
  {
    await using f = await startLiveFunnel();
    assert.equal(
      await refusedStatus(
        dialOurs(f.moqPort, { webTransport: true, origin: "https://evil.example" }),
      ),
      403,
    );
    assert.equal(
      await refusedStatus(
        dialOurs(f.moqPort, { webTransport: true, origin: `https://localhost:${f.moqPort}` }),
      ),
      200,
    );
    assert.equal(
      await refusedStatus(dialOurs(f.moqPort, { webTransport: true })),
      200,
      "no Origin: not a browser",
    );
  }
  {
    await using f = await startLiveFunnel({ CORS_ALLOWED_ORIGINS: "https://app.example" });
    assert.equal(
      await refusedStatus(
        dialOurs(f.moqPort, { webTransport: true, origin: "https://app.example" }),
      ),
      200,
    );
    assert.equal(
      await refusedStatus(
        dialOurs(f.moqPort, { webTransport: true, origin: "https://evil.example" }),
      ),
      403,
    );
  }
});

// The credential lease: the listener checks a session's credential on every request and ends the
// session at its `exp`, as the relay does. The clock is the funnel's, shifted by hand.
function shiftedClock(): { now: () => number; shift(ms: number): void } {
  let offset = 0;
  return { now: () => Date.now() + offset, shift: (ms) => void (offset += ms) };
}

async function leaseFunnel(key: TestKey, now: () => number, source?: MemoryKeySource) {
  const keys = source ?? new MemoryKeySource(await keySetOf(key));
  const verifier = await createVerifier(keys, { now });
  return await startLiveFunnel({}, { verifier, live: { now } });
}

Deno.test("A session whose credential has expired past the leeway opens nothing more and is ended", async () => {
  using _q = quiet();
  const key = await makeKey();
  const clock = shiftedClock();
  await using f = await leaseFunnel(key, clock.now);
  const poster = await signToken(key.privateJwk, {
    sub: "alice",
    scopes: [{ actions: ["post"], broadcast: { prefix: "room" } }],
  }, { ttlSeconds: 3600, now: clock.now });
  await post(f.base, "room/1/chat", '"hi"', poster);
  await post(f.base, "room/1/other", '"x"', poster);
  const reader = await signToken(key.privateJwk, {
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  }, { ttlSeconds: 120, now: clock.now });

  const moq = await dialOurs(f.moqPort, { jwt: reader });
  try {
    assert.equal((await take(moq.subscribe("room/1", "chat"), 1)).length, 1);
    // 120 s of lifetime and the 60 s leeway have passed (by the funnel's clock).
    clock.shift(200_000);
    const fresh = await dialOurs(f.moqPort, { jwt: reader });
    assert.equal((await fresh.closed).code, MoqCode.Unauthorized, "a new session is refused");
    const late = moq.subscribe("room/1", "other");
    await assert.rejects(late.ready, (e: unknown) => e instanceof MoqError);
    const info = await moq.closed;
    assert.equal(info.code, MoqCode.Unauthorized, "the admitted session is ended too");
  } finally {
    moq.close(0, "");
  }
});

Deno.test("A session whose credential's key left the key set opens nothing more and is ended", async () => {
  using _q = quiet();
  const key = await makeKey();
  const other = await makeKey();
  const source = new MemoryKeySource(await keySetOf(key, other));
  await using f = await leaseFunnel(key, Date.now, source);
  const poster = await token(other, {
    sub: "alice",
    scopes: [{ actions: ["post"], broadcast: { prefix: "room" } }],
  });
  await post(f.base, "room/1/chat", '"hi"', poster);
  const reader = await token(key, {
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  });
  const moq = await dialOurs(f.moqPort, { jwt: reader });
  try {
    assert.equal((await take(moq.subscribe("room/1", "chat"), 1)).length, 1);
    source.replace(await keySetOf(other));
    const late = moq.subscribe("room/1", "chat");
    await assert.rejects(late.ready, (e: unknown) => e instanceof MoqError);
    assert.equal((await moq.closed).code, MoqCode.Unauthorized);
  } finally {
    moq.close(0, "");
  }
});

Deno.test("A session ends when its credential's exp passes by the funnel's clock, not the worker's", async () => {
  using _q = quiet();
  const key = await makeKey();
  const clock = shiftedClock();
  // The funnel's clock runs an hour ahead of the machine's: the lease must follow the funnel's.
  clock.shift(3_600_000);
  await using f = await leaseFunnel(key, clock.now);
  const reader = await signToken(key.privateJwk, {
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  }, { ttlSeconds: 2, now: clock.now });
  const moq = await dialOurs(f.moqPort, { jwt: reader });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const info = await Promise.race([
    moq.closed,
    new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 15_000))),
  ]);
  clearTimeout(timer);
  if (!info) moq.close(0, "");
  assert.ok(info, "the listener ended the session at the credential's exp");
  assert.equal(info.code, MoqCode.Unauthorized);
  assert.equal(info.reason, "credential expired");
});
