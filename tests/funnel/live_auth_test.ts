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
} from "../../src/auth/mod.ts";
import { MoqCode, MoqError } from "../../src/moq/mod.ts";
import { WebTransportRefusedError } from "../../src/transport/mod.ts";
import { keySetOf, makeKey, type TestKey } from "../support/credentials.ts";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { post, startLiveFunnel, take } from "../support/live_funnel.ts";

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
