import assert from "node:assert/strict";
import { AuthError, bearerChallenge, extractBearer, tokenFromUrl } from "../../src/auth/mod.ts";

Deno.test("extractBearer reads the Bearer scheme only", () => {
  assert.equal(extractBearer("Bearer abc.def.ghi"), "abc.def.ghi");
  assert.equal(extractBearer("bearer abc.def-_ghi"), "abc.def-_ghi");
  assert.equal(extractBearer("BEARER   tok=="), "tok==");
  assert.equal(extractBearer(null), undefined);
  assert.equal(extractBearer(undefined), undefined);
  assert.equal(extractBearer(""), undefined);
  assert.equal(extractBearer("Basic dXNlcjpwYXNz"), undefined);
  assert.equal(extractBearer("Bearer"), undefined);
  assert.equal(extractBearer("Bearer a b"), undefined);
  assert.equal(extractBearer("Bearerabc"), undefined);
});

Deno.test("tokenFromUrl reads the jwt query parameter", () => {
  assert.equal(tokenFromUrl("https://relay.example/anon?jwt=abc.def.ghi"), "abc.def.ghi");
  assert.equal(tokenFromUrl(new URL("moqt://relay.example:4443/?x=1&jwt=t")), "t");
  assert.equal(tokenFromUrl("https://relay.example/"), undefined);
  assert.equal(tokenFromUrl("https://relay.example/?jwt="), undefined);
  assert.equal(tokenFromUrl("not a url"), undefined);
});

Deno.test("bearerChallenge follows RFC 6750", () => {
  assert.equal(bearerChallenge(), "Bearer");
  assert.equal(bearerChallenge(new AuthError("missing", "none")), "Bearer");
  assert.equal(bearerChallenge(new AuthError("expired", "old")), 'Bearer error="invalid_token"');
  assert.equal(
    bearerChallenge(new AuthError("forbidden", "no")),
    'Bearer error="insufficient_scope"',
  );
});

Deno.test("bearerChallenge names a realm before the error", () => {
  assert.equal(bearerChallenge(undefined, { realm: "sluice" }), 'Bearer realm="sluice"');
  assert.equal(
    bearerChallenge(new AuthError("missing", "none"), { realm: "sluice" }),
    'Bearer realm="sluice"',
  );
  assert.equal(
    bearerChallenge(new AuthError("bad_signature", "no"), { realm: "sluice" }),
    'Bearer realm="sluice", error="invalid_token"',
  );
  assert.equal(
    bearerChallenge(new AuthError("forbidden", "no"), { realm: "sluice" }),
    'Bearer realm="sluice", error="insufficient_scope"',
  );
  assert.equal(bearerChallenge(undefined, { realm: 'a "b"' }), 'Bearer realm="a \\"b\\""');
});
