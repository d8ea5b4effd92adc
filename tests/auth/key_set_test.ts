import assert from "node:assert/strict";
import { ed25519Thumbprint, parseKeySet } from "../../src/auth/mod.ts";
import { makeKey } from "../support/credentials.ts";

Deno.test("a key set is read with kids and prefixes", async () => {
  const a = await makeKey("room");
  const b = await makeKey();
  const set = await parseKeySet(JSON.stringify({ keys: [a.publicJwk, b.publicJwk] }));
  assert.equal(set.size, 2);
  assert.equal(set.get(a.kid)?.prefix, "room");
  assert.equal(set.get(b.kid)?.prefix, undefined);
  assert.equal(set.get("nope"), undefined);
  assert.deepEqual(set.toJSON(), { keys: [a.publicJwk, b.publicJwk] });
});

Deno.test("a missing kid is computed as the RFC 7638 thumbprint", async () => {
  const a = await makeKey();
  const { kid: _kid, ...withoutKid } = a.publicJwk;
  const set = await parseKeySet(JSON.stringify({ keys: [withoutKid] }));
  assert.equal([...set.keys()][0]?.kid, a.kid);
  assert.equal(await ed25519Thumbprint(a.publicJwk.x!), a.kid);
});

Deno.test("a set holding a private key is refused whole", async () => {
  const a = await makeKey();
  const b = await makeKey();
  await assert.rejects(
    parseKeySet(JSON.stringify({ keys: [a.publicJwk, b.privateJwk] })),
    /private member "d"/,
  );
});

Deno.test("unacceptable keys and documents are refused with a reason", async () => {
  const a = await makeKey();
  const cases: [unknown, RegExp][] = [
    [{ keys: [{ ...a.publicJwk, kid: "made-up" }] }, /thumbprint/],
    [{ keys: [{ ...a.publicJwk, crv: "Ed448" }] }, /not an Ed25519 key/],
    [{ keys: [{ kty: "RSA", n: "AQAB", e: "AQAB" }] }, /not an Ed25519 key/],
    [{ keys: [{ ...a.publicJwk, x: "AAAA" }] }, /not 32/],
    [{ keys: [{ ...a.publicJwk, x: 12 }] }, /base64url/],
    [{ keys: [{ ...a.publicJwk, alg: "ES256" }] }, /alg/],
    [{ keys: [{ ...a.publicJwk, use: "enc" }] }, /use/],
    [{ keys: [{ ...a.publicJwk, prefix: "/room" }] }, /leading slash/],
    [{ keys: [{ ...a.publicJwk, prefix: 3 }] }, /prefix/],
    [{ keys: [a.publicJwk, a.publicJwk] }, /twice/],
    [{ keys: "none" }, /JWK Set/],
    [[a.publicJwk], /JWK Set/],
  ];
  for (const [document, reason] of cases) {
    await assert.rejects(parseKeySet(JSON.stringify(document)), reason);
  }
  await assert.rejects(parseKeySet("{not json"), SyntaxError);
});

Deno.test("an empty key set is valid and trusts nothing", async () => {
  const set = await parseKeySet('{"keys":[]}');
  assert.equal(set.size, 0);
});
