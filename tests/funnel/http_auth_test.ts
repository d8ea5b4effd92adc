import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { startFunnel } from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { keySetOf, keySetText } from "../support/credentials.ts";
import { call, claims, makeKey, NOW, signWith, startTestFunnel, tokenFor } from "./_http.ts";

const TRACK = "/tracks/room/1/chat";
const POST_FETCH = [{ actions: ["post", "fetch"], broadcast: { prefix: "room" } }];

Deno.test("Auth on: missing or invalid credentials are 401 with WWW-Authenticate: Bearer", async () => {
  const key = await makeKey();
  const stranger = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key] });
  const refused = [
    undefined,
    "not-a-jwt",
    await signWith(stranger, claims()),
    await signWith(key, claims({ exp: NOW - 120, iat: NOW - 1000, nbf: NOW - 1000 })),
    await signWith(key, claims({ nbf: NOW + 600 })),
    await signWith(key, claims(), { alg: "HS256" }),
    await signWith(key, claims(), { crit: ["exp"] }),
    await signWith(key, claims({ role: "admin" })),
    await signWith(key, claims({ scopes: [{ actions: ["post"], broadcast: "room" }] })),
    await signWith(key, claims({ exp: NOW + 7200 })),
  ];
  for (const [i, token] of refused.entries()) {
    const reply = await call(t.base, "POST", TRACK, { body: "1", ...(token ? { token } : {}) });
    assert.equal(reply.status, 401, `credential #${i}`);
    assert.match(reply.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.equal(reply.headers.get("content-type"), "application/problem+json");
  }
  const garbageHeader = await call(t.base, "GET", TRACK, { headers: { authorization: "Basic x" } });
  assert.equal(garbageHeader.status, 401);
  assert.equal((await call(t.base, "GET", TRACK)).status, 401, "every method needs a credential");
});

Deno.test("Auth on: the sender is the credential's sub, whatever the payload claims", async () => {
  const key = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key] });
  const token = await tokenFor(key, POST_FETCH);
  const posted = await call(t.base, "POST", TRACK, { body: '{"sender":"mallory"}', token });
  assert.equal(posted.status, 201);
  const anonymous = await tokenFor(key, POST_FETCH, { sub: undefined });
  assert.equal((await call(t.base, "POST", TRACK, { body: "2", token: anonymous })).status, 201);
  const history = await call(t.base, "GET", TRACK, { token });
  const [first, second] = history.json.records;
  assert.equal(first.sender, "alice");
  assert.deepEqual(first.payload, { sender: "mallory" });
  assert.equal("sender" in second, false, "no sub, no sender");
});

Deno.test("Auth on: scopes decide per action and path (403), with segment-aware prefixes", async () => {
  const key = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key] });
  const ab = await tokenFor(key, [{ actions: ["post"], broadcast: { prefix: "a/b" } }]);
  assert.equal((await call(t.base, "POST", "/tracks/a/b/t", { body: "1", token: ab })).status, 201);
  assert.equal(
    (await call(t.base, "POST", "/tracks/a/b/c/t", { body: "1", token: ab })).status,
    201,
  );
  assert.equal(
    (await call(t.base, "POST", "/tracks/a/bc/t", { body: "1", token: ab })).status,
    403,
  );
  assert.equal((await call(t.base, "GET", "/tracks/a/b/t", { token: ab })).status, 403, "no fetch");
  assert.equal(
    (await call(t.base, "DELETE", "/tracks/a/b/t?group=e1-g0", { token: ab })).status,
    403,
    "post never redacts",
  );
  assert.equal((await call(t.base, "PUT", "/tracks/a/b/u", { token: ab })).status, 201);

  const exactTrack = await tokenFor(key, [
    { actions: ["post", "fetch"], broadcast: { exact: "a/b" }, track: { exact: "t" } },
  ]);
  assert.equal((await call(t.base, "GET", "/tracks/a/b/t", { token: exactTrack })).status, 200);
  assert.equal((await call(t.base, "GET", "/tracks/a/b/u", { token: exactTrack })).status, 403);
  assert.equal(
    (await call(t.base, "POST", "/tracks/a/b/c/t", { body: "1", token: exactTrack })).status,
    403,
    "exact does not cover beneath",
  );

  const publisher = await tokenFor(key, [{ actions: ["publish"], broadcast: { prefix: "" } }]);
  assert.equal(
    (await call(t.base, "POST", "/tracks/a/b/t", { body: "1", token: publisher })).status,
    403,
    "publish does not post",
  );
  const pathAuth = await tokenFor(key, [], {
    scopes: undefined,
    path_auth: { root: "a", pub: "b", sub: "b" },
  });
  assert.equal((await call(t.base, "GET", "/tracks/a/b/t", { token: pathAuth })).status, 200);
  assert.equal(
    (await call(t.base, "POST", "/tracks/a/b/t", { body: "1", token: pathAuth })).status,
    403,
    "path_auth never posts",
  );
});

Deno.test("Auth on: redaction needs redact scope and carries the moderator's sub", async () => {
  const key = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key] });
  const writer = await tokenFor(key, POST_FETCH);
  await call(t.base, "POST", TRACK, { body: '"oops"', token: writer });
  const moderator = await tokenFor(key, [{ actions: ["redact"], broadcast: { prefix: "room" } }], {
    sub: undefined,
  });
  const redacted = await call(t.base, "DELETE", TRACK + "?group=e1-g0", { token: moderator });
  assert.equal(redacted.status, 201);
  const history = await call(t.base, "GET", TRACK, { token: writer });
  const redaction = history.json.records[1];
  assert.equal(redaction.redacts, "e000001-g00000000");
  assert.equal("sender" in redaction, false, "an anonymous moderator stays anonymous");
});

Deno.test("Auth on: a credential is refused once its key leaves the set, or it expires", async () => {
  const key = await makeKey();
  const other = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key, other] });
  const token = await tokenFor(key, POST_FETCH);
  assert.equal((await call(t.base, "GET", TRACK, { token })).status, 404, "accepted: no track yet");
  t.keySource!.replace(await keySetOf(other));
  assert.equal((await call(t.base, "GET", TRACK, { token })).status, 401);
  t.keySource!.replace(await keySetOf(key, other));
  assert.equal((await call(t.base, "GET", TRACK, { token })).status, 404);
  t.clock.now += 3600_000 + 61_000;
  assert.equal((await call(t.base, "GET", TRACK, { token })).status, 401, "expired (past leeway)");
});

Deno.test("Auth on: idempotency keys are scoped per sender", async () => {
  const key = await makeKey();
  await using t = await startTestFunnel({}, { keys: [key] });
  const alice = await tokenFor(key, POST_FETCH);
  const bob = await tokenFor(key, POST_FETCH, { sub: "bob" });
  const headers = { "idempotency-key": "same" };
  const a = await call(t.base, "POST", TRACK, { body: "1", token: alice, headers });
  const b = await call(t.base, "POST", TRACK, { body: "2", token: bob, headers });
  assert.notEqual(a.json.group, b.json.group);
  const aRetry = await call(t.base, "POST", TRACK, { body: "1", token: alice, headers });
  assert.equal(aRetry.json.group, a.json.group);
});

Deno.test("Auth on: per-sender limits count each sub separately", async () => {
  const key = await makeKey();
  await using t = await startTestFunnel({ FUNNEL_SENDER_LIMIT: "1,1" }, { keys: [key] });
  const alice = await tokenFor(key, POST_FETCH);
  const bob = await tokenFor(key, POST_FETCH, { sub: "bob" });
  assert.equal((await call(t.base, "POST", TRACK, { body: "1", token: alice })).status, 201);
  assert.equal((await call(t.base, "POST", TRACK, { body: "1", token: alice })).status, 429);
  assert.equal((await call(t.base, "POST", TRACK, { body: "1", token: bob })).status, 201);
});

Deno.test("Auth on with SLUICE_AUTH_AUDIENCE and SLUICE_AUTH_ISSUER: a credential minted for another service is 401", async () => {
  const key = await makeKey();
  const dir = await Deno.makeTempDir({ prefix: "sluice-aud-" });
  await Deno.writeTextFile(`${dir}/keys.json`, keySetText(key));
  // Through the configuration, as the command starts it: the settings must reach the verifier.
  const funnel = await startFunnel(
    loadFunnelConfig({
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "none",
      SLUICE_AUTH_KEYS: `${dir}/keys.json`,
      SLUICE_AUTH_AUDIENCE: "funnel.example",
      SLUICE_AUTH_ISSUER: "auth.example",
    }),
    { log: silentLogger },
  );
  try {
    const base = `http://127.0.0.1:${funnel.addr.port}`;
    const now = Math.floor(Date.now() / 1000);
    const mint = (extra: Record<string, unknown>) =>
      signWith(key, claims({ iat: now, nbf: now, exp: now + 600, ...extra }));
    const refused = [
      await mint({ aud: "relay.example", iss: "auth.example" }),
      await mint({ iss: "auth.example" }),
      await mint({ aud: "funnel.example", iss: "other.example" }),
      await mint({ aud: "funnel.example" }),
    ];
    for (const [i, token] of refused.entries()) {
      const reply = await call(base, "POST", TRACK, { body: "1", token });
      assert.equal(reply.status, 401, `credential #${i}: ${reply.text}`);
    }
    const meant = await mint({ aud: ["funnel.example"], iss: "auth.example" });
    assert.equal((await call(base, "POST", TRACK, { body: "1", token: meant })).status, 201);
  } finally {
    await funnel.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
