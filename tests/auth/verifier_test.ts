import assert from "node:assert/strict";
import {
  AuthError,
  type AuthErrorCode,
  ClaimsError,
  createVerifier,
  MemoryKeySource,
  parseClaims,
  type Verifier,
} from "../../src/auth/mod.ts";
import { errorResponse } from "../../src/http/mod.ts";
import {
  claims,
  compact,
  keySetOf,
  makeKey,
  NOW,
  NOW_MS,
  signWith,
  type TestKey,
} from "../support/credentials.ts";

interface Fixture {
  key: TestKey;
  source: MemoryKeySource;
  verifier: Verifier;
  clock: { now: number };
}

async function fixture(prefix?: string): Promise<Fixture> {
  const key = await makeKey(prefix);
  const source = new MemoryKeySource(await keySetOf(key));
  const clock = { now: NOW_MS };
  const verifier = await createVerifier(source, { now: () => clock.now });
  return { key, source, verifier, clock };
}

async function refused(
  verifier: Verifier,
  token: string | undefined,
  code: AuthErrorCode,
): Promise<AuthError> {
  const error = await verifier.verify(token).then(
    () => assert.fail(`expected the credential to be refused with ${code}`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof AuthError, `expected AuthError, got ${error}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.status, 401);
  return error;
}

Deno.test("a valid credential yields its sub, expiry and scopes", async () => {
  const { key, verifier } = await fixture();
  const grant = await verifier.verify(await signWith(key, claims({ jti: "abc" })));
  assert.equal(grant.sub, "alice");
  assert.equal(grant.expiresAt, NOW + 3600);
  assert.ok(grant.allows("post", "room/1", "chat"));
  assert.ok(grant.allows("fetch", "room", "chat"));
  assert.ok(!grant.allows("redact", "room/1", "chat"));
  assert.ok(!grant.allows("post", "roomy", "chat"));
  verifier.close();
});

Deno.test("a credential without sub has no sender", async () => {
  const { key, verifier } = await fixture();
  const grant = await verifier.verify(await signWith(key, claims({ sub: undefined })));
  assert.equal(grant.sub, undefined);
  verifier.close();
});

Deno.test("missing and malformed credentials are refused with 401", async () => {
  const { key, verifier } = await fixture();
  await refused(verifier, undefined, "missing");
  await refused(verifier, "", "missing");
  await refused(verifier, "not-a-jwt", "malformed");
  await refused(verifier, "a.b.c", "malformed");
  await refused(verifier, "x".repeat(10_000), "malformed");
  await refused(verifier, await signWith(key, claims(), { kid: undefined }), "malformed");
  verifier.close();
});

Deno.test("expiry is checked against the injected clock with 60 s leeway", async () => {
  const { key, verifier, clock } = await fixture();
  const token = await signWith(key, claims({ iat: NOW - 600, nbf: NOW - 600, exp: NOW + 10 }));
  clock.now = (NOW + 69) * 1000;
  await verifier.verify(token); // within leeway
  clock.now = (NOW + 70) * 1000;
  await refused(verifier, token, "expired");
  verifier.close();
});

Deno.test("a cached credential is refused once it expires", async () => {
  const { key, verifier, clock } = await fixture();
  const token = await signWith(key, claims({ exp: NOW + 100 }));
  const first = await verifier.verify(token);
  assert.equal(await verifier.verify(token), first, "second call is served from the cache");
  clock.now = (NOW + 160) * 1000;
  await refused(verifier, token, "expired");
  verifier.close();
});

Deno.test("a credential not yet valid is refused, and accepted once valid", async () => {
  const { key, verifier, clock } = await fixture();
  const token = await signWith(key, claims({ iat: NOW, nbf: NOW + 300, exp: NOW + 600 }));
  await refused(verifier, token, "not_yet_valid");
  clock.now = (NOW + 241) * 1000;
  await verifier.verify(token);
  // iat in the future beyond leeway is refused too.
  const early = await signWith(key, claims({ iat: NOW + 1000, nbf: NOW, exp: NOW + 2000 }));
  clock.now = NOW_MS;
  await refused(verifier, early, "not_yet_valid");
  verifier.close();
});

Deno.test("a lifetime over one hour refuses the credential", async () => {
  const { key, verifier } = await fixture();
  await refused(verifier, await signWith(key, claims({ exp: NOW + 3601 })), "bad_claims");
  await verifier.verify(await signWith(key, claims({ exp: NOW + 3600 })));
  verifier.close();
});

Deno.test("a credential from a key outside the set is refused", async () => {
  const { verifier } = await fixture();
  const stranger = await makeKey();
  await refused(verifier, await signWith(stranger, claims()), "unknown_key");
  verifier.close();
});

Deno.test("a credential naming a trusted kid but signed by another key is refused", async () => {
  const { key, verifier } = await fixture();
  const stranger = await makeKey();
  const forged = await signWith(stranger, claims(), { kid: key.kid });
  await refused(verifier, forged, "bad_signature");
  // A tampered payload under a real signature fails the same way.
  const [header, , signature] = (await signWith(key, claims())).split(".");
  const [, payload] = (await signWith(key, claims({ sub: "mallory" }))).split(".");
  await refused(verifier, `${header}.${payload}.${signature}`, "bad_signature");
  verifier.close();
});

Deno.test("a cached credential is refused on the next call once its key leaves the set", async () => {
  const { key, source, verifier } = await fixture();
  const other = await makeKey();
  const token = await signWith(key, claims());
  await verifier.verify(token);
  await verifier.verify(token);
  source.replace(await keySetOf(other));
  await refused(verifier, token, "unknown_key");
  // Back in the set, it verifies again (fully).
  source.replace(await keySetOf(key, other));
  await verifier.verify(token);
  verifier.close();
});

Deno.test("a reloaded key with a new prefix confines cached grants at once", async () => {
  const { key, source, verifier } = await fixture();
  const token = await signWith(
    key,
    claims({ scopes: [{ actions: ["post"], broadcast: { prefix: "" } }] }),
  );
  assert.ok((await verifier.verify(token)).allows("post", "elsewhere", "t"));
  source.replace(await keySetOf({ ...key, publicJwk: { ...key.publicJwk, prefix: "room" } }));
  const grant = await verifier.verify(token);
  assert.ok(!grant.allows("post", "elsewhere", "t"));
  assert.ok(grant.allows("post", "room/1", "t"));
  verifier.close();
});

Deno.test("algorithms other than EdDSA are refused, including none, HS256 and ES256", async () => {
  const { key, verifier } = await fixture();
  const payload = claims();
  const hmac = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const hs256 = await compact(
    { alg: "HS256", kid: key.kid },
    payload,
    (input) => crypto.subtle.sign("HMAC", hmac, input as BufferSource),
  );
  await refused(verifier, hs256, "malformed");
  const ec = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
    "verify",
  ]);
  const es256 = await compact(
    { alg: "ES256", kid: key.kid },
    payload,
    (input) =>
      crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, ec.privateKey, input as BufferSource),
  );
  await refused(verifier, es256, "malformed");
  const none = await compact(
    { alg: "none", kid: key.kid },
    payload,
    () => Promise.resolve(new ArrayBuffer(0)),
  );
  await refused(verifier, none, "malformed");
  await refused(verifier, `${none}AAAA`, "malformed");
  // An EdDSA signature under a header that claims another algorithm is still refused.
  await refused(verifier, await signWith(key, payload, { alg: "Ed448" }), "malformed");
  verifier.close();
});

Deno.test("a header with crit is refused", async () => {
  const { key, verifier } = await fixture();
  const token = await signWith(key, claims(), { crit: ["exp"] });
  const error = await refused(verifier, token, "malformed");
  assert.match(error.message, /crit/);
  verifier.close();
});

Deno.test("unknown claims and broken claims refuse the whole credential", async () => {
  const { key, verifier } = await fixture();
  const cases: Record<string, unknown>[] = [
    { aud: 5 },
    { iss: "" },
    { admin: true },
    { iat: undefined },
    { nbf: undefined },
    { exp: undefined },
    { iat: NOW + 0.5 },
    { exp: String(NOW + 100) },
    { exp: NOW - 10 },
    { sub: 42 },
    { sub: "" },
    { jti: 7 },
    { path_auth: { root: "room", pub: "x" } },
    { scopes: undefined },
    { scopes: "post:room" },
  ];
  for (const extra of cases) {
    const error = await refused(verifier, await signWith(key, claims(extra)), "bad_claims");
    assert.doesNotMatch(error.message, /eyJ/, "the message never echoes the token");
  }
  const notObject = await signWith(key, [1, 2]);
  await refused(verifier, notObject, "bad_claims");
  verifier.close();
});

Deno.test("malformed scopes refuse the whole credential", async () => {
  const { key, verifier } = await fixture();
  const good = { actions: ["post"], broadcast: { exact: "room/1" } };
  const bad: unknown[] = [
    { actions: ["post", "delete"], broadcast: { exact: "room/1" } },
    { actions: [], broadcast: { exact: "room/1" } },
    { actions: "post", broadcast: { exact: "room/1" } },
    { actions: ["post"], broadcast: { exact: "room/1", prefix: "room" } },
    { actions: ["post"], broadcast: {} },
    { actions: ["post"], broadcast: "room/1" },
    { actions: ["post"], broadcast: { exact: "/room/1" } },
    { actions: ["post"], broadcast: { prefix: "room/" } },
    { actions: ["post"], broadcast: { exact: "room//1" } },
    { actions: ["post"], broadcast: { exact: "room/../x" } },
    { actions: ["post"], broadcast: { exact: "" } },
    { actions: ["post"], broadcast: { exact: "room/1" }, track: { prefix: "c" } },
    { actions: ["post"], broadcast: { exact: "room/1" }, track: { exact: "a/b" } },
    { actions: ["post"], broadcast: { exact: "room/1" }, track: "chat" },
    { actions: ["post"], broadcast: { exact: "room/1" }, note: "hi" },
    "post:room/1",
  ];
  for (const scope of bad) {
    await refused(verifier, await signWith(key, claims({ scopes: [good, scope] })), "bad_claims");
  }
  verifier.close();
});

Deno.test("scopes and path_auth together are refused", async () => {
  const { key, verifier } = await fixture();
  const token = await signWith(key, claims({ path_auth: { root: "room", sub: "" } }));
  const error = await refused(verifier, token, "bad_claims");
  assert.match(error.message, /both/);
  verifier.close();
});

Deno.test("a path_auth credential grants publish at pub and fetch/subscribe at sub", async () => {
  const { key, verifier } = await fixture();
  const token = await signWith(
    key,
    claims({ scopes: undefined, path_auth: { root: "org", pub: "live", sub: "watch" } }),
  );
  const grant = await verifier.verify(token);
  assert.ok(grant.allows("publish", "org/live"));
  assert.ok(grant.allows("publish", "org/live/cam1", "video"));
  assert.ok(!grant.allows("publish", "org/lively"));
  assert.ok(!grant.allows("publish", "org/watch"));
  assert.ok(grant.allows("fetch", "org/watch/room", "chat"));
  assert.ok(grant.allows("subscribe", "org/watch", "chat"));
  assert.ok(!grant.allows("fetch", "org/live", "chat"));
  for (const path of ["org/live", "org/watch"]) {
    assert.ok(!grant.allows("post", path, "chat"), "path_auth never posts");
    assert.ok(!grant.allows("redact", path, "chat"), "path_auth never redacts");
  }
  verifier.close();
});

Deno.test("a key's prefix confines what its credentials grant", async () => {
  const { key, verifier } = await fixture("tenant/a");
  const token = await signWith(
    key,
    claims({
      scopes: [
        { actions: ["post"], broadcast: { prefix: "" } },
        { actions: ["fetch"], broadcast: { exact: "tenant/b/room" } },
      ],
    }),
  );
  const grant = await verifier.verify(token);
  assert.equal(grant.keyPrefix, "tenant/a");
  assert.ok(grant.allows("post", "tenant/a", "t"));
  assert.ok(grant.allows("post", "tenant/a/room", "t"));
  assert.ok(!grant.allows("post", "tenant/ab", "t"));
  assert.ok(!grant.allows("post", "tenant/b/room", "t"));
  assert.ok(
    !grant.allows("fetch", "tenant/b/room", "t"),
    "a scope outside the prefix grants nothing",
  );
  verifier.close();
});

Deno.test("verify rejects instead of throwing synchronously", async () => {
  const { verifier } = await fixture();
  const pending = verifier.verify("junk");
  assert.ok(pending instanceof Promise);
  await assert.rejects(pending, AuthError);
  verifier.close();
});

Deno.test("with an audience and an issuer configured, only credentials naming both are accepted", async () => {
  const key = await makeKey();
  const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)), {
    now: () => NOW_MS,
    audience: "relay.example",
    issuer: "auth.example",
  });
  const ok = await verifier.verify(
    await signWith(key, claims({ aud: ["funnel.example", "relay.example"], iss: "auth.example" })),
  );
  assert.equal(ok.expiresAt, NOW + 3600);
  await verifier.verify(await signWith(key, claims({ aud: "relay.example", iss: "auth.example" })));
  // Minted for another service, by another issuer, or saying neither.
  const other = await refused(
    verifier,
    await signWith(key, claims({ aud: "funnel.example", iss: "auth.example" })),
    "bad_claims",
  );
  assert.match(other.message, /not meant for "relay\.example"/);
  await refused(
    verifier,
    await signWith(key, claims({ aud: "relay.example", iss: "elsewhere" })),
    "bad_claims",
  );
  await refused(verifier, await signWith(key, claims()), "bad_claims");
  verifier.close();
});

Deno.test("without an audience or issuer configured, aud and iss are accepted and not checked", async () => {
  const { key, verifier } = await fixture();
  await verifier.verify(await signWith(key, claims({ aud: "anything", iss: "anyone" })));
  await verifier.verify(await signWith(key, claims()));
  await refused(verifier, await signWith(key, claims({ aud: [] })), "bad_claims");
  await refused(verifier, await signWith(key, claims({ iss: 7 })), "bad_claims");
  verifier.close();
});

Deno.test("bad claims are a ClaimsError with code bad_claims, not a built-in TypeError", () => {
  for (const bad of [[1], { ...claims(), extra: 1 }, claims({ scopes: ["post:room"] })]) {
    const error = (() => {
      try {
        parseClaims(bad);
      } catch (error) {
        return error;
      }
      assert.fail("expected the claims to be refused");
    })();
    assert.ok(error instanceof ClaimsError, `expected ClaimsError, got ${error}`);
    assert.equal(error.code, "bad_claims");
  }
});

Deno.test("a TypeError of our own while claims are read is a 500, not the caller's 401", async () => {
  const { key, verifier } = await fixture();
  // A bug stands in as a built-in that throws while one claim (its iat a marker) is read.
  const marker = NOW - 17;
  const token = await signWith(key, claims({ iat: marker, nbf: marker }));
  const isSafeInteger = Number.isSafeInteger;
  Number.isSafeInteger = (value: unknown): boolean => {
    if (value === marker) throw new TypeError("a bug");
    return isSafeInteger(value);
  };
  try {
    const error = await verifier.verify(token).then(
      () => assert.fail("expected the bug to surface"),
      (error: unknown) => error,
    );
    assert.ok(!(error instanceof AuthError), `a bug is not a refused credential: ${error}`);
    assert.ok(error instanceof TypeError);
    const response = errorResponse(error);
    assert.equal(response.status, 500);
    assert.equal((await response.json()).code, "internal");
  } finally {
    Number.isSafeInteger = isSafeInteger;
    verifier.close();
  }
});
