import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { createSigner, createVerifier, MemoryKeySource, signToken } from "../../src/auth/mod.ts";
import { keySetOf, makeKey, NOW, NOW_MS } from "../support/credentials.ts";

Deno.test("signToken writes kid, iat, nbf, exp and verifies", async () => {
  const key = await makeKey();
  const token = await signToken(
    key.privateJwk,
    { sub: "funnel", scopes: [{ actions: ["publish"], broadcast: { prefix: "live" } }] },
    { ttlSeconds: 600, now: () => NOW_MS },
  );
  assert.deepEqual(decodeProtectedHeader(token), { alg: "EdDSA", typ: "JWT", kid: key.kid });
  const payload = decodeJwt(token);
  assert.equal(payload.iat, NOW);
  assert.equal(payload.nbf, NOW);
  assert.equal(payload.exp, NOW + 600);
  const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)), {
    now: () => NOW_MS,
  });
  const grant = await verifier.verify(token);
  assert.ok(grant.allows("publish", "live/x"));
  assert.equal(grant.sub, "funnel");
  verifier.close();
});

Deno.test("signing refuses what a verifier would refuse", async () => {
  const key = await makeKey();
  const signer = await createSigner(key.privateJwk);
  const scopes = [{ actions: ["post" as const], broadcast: { exact: "a" } }];
  await assert.rejects(signer.sign({ scopes }, { ttlSeconds: 3601 }), RangeError);
  await assert.rejects(signer.sign({ scopes }, { ttlSeconds: 0 }), RangeError);
  await assert.rejects(signer.sign({}), /missing/);
  await assert.rejects(
    signer.sign({ scopes, path_auth: { root: "a", pub: "b" } }),
    /both/,
  );
  await assert.rejects(
    signer.sign({ scopes: [{ actions: ["post"], broadcast: { exact: "/a" } }] }),
    /leading slash/,
  );
});

Deno.test("createSigner refuses public keys and mismatched kids", async () => {
  const key = await makeKey();
  await assert.rejects(createSigner(key.publicJwk), /not a private key/);
  await assert.rejects(createSigner({ ...key.privateJwk, kid: "x" }), /thumbprint/);
  await assert.rejects(createSigner("nope"), /not a JSON object/);
  const signer = await createSigner(key.privateJwk);
  assert.equal(signer.kid, key.kid);
});
