// The refusal a feed tells before it dials, from its own credential's claims read
// without verifying: only where the scopes plainly do not allow subscribing, and
// never for a token the client cannot read (the server decides those).
import assert from "node:assert/strict";
import { foreseeRefusal } from "../../src/client/foresight.ts";
import { streamUrlOf } from "../../src/client/follow.ts";

/** An unsigned JWT with `claims` (the client reads, never verifies). */
function jwt(claims: Record<string, unknown>): string {
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const iat = 1_800_000_000;
  return `${b64({ alg: "EdDSA" })}.${b64({ iat, nbf: iat, exp: iat + 600, ...claims })}.sig`;
}

Deno.test("scopes that do not allow subscribing are foreseen, with what they allow", () => {
  const fetchOnly = jwt({ scopes: [{ actions: ["fetch"], broadcast: { prefix: "room" } }] });
  const refusal = foreseeRefusal(fetchOnly, "room/1", "chat");
  assert.equal(refusal?.reason, "unauthorized");
  assert.match(refusal!.message, /subscribing to "chat" of "room\/1" \(its scopes allow fetch\)/);
  const elsewhere = jwt({ scopes: [{ actions: ["subscribe"], broadcast: { prefix: "other" } }] });
  assert.ok(foreseeRefusal(elsewhere, "room/1", "chat"));
  const otherTrack = jwt({
    scopes: [{ actions: ["subscribe"], broadcast: { exact: "room/1" }, track: { exact: "video" } }],
  });
  assert.ok(foreseeRefusal(otherTrack, "room/1", "chat"));
  // path_auth grants fetch and subscribe beneath root/sub.
  const pathAuth = jwt({ path_auth: { root: "room", sub: "1" } });
  assert.equal(foreseeRefusal(pathAuth, "room/1", "chat"), undefined);
  assert.ok(foreseeRefusal(pathAuth, "room/2", "chat"));
});

Deno.test("allowed, unreadable or absent credentials are left to the server", () => {
  const allowed = jwt({ scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }] });
  assert.equal(foreseeRefusal(allowed, "room/1", "chat"), undefined);
  assert.equal(foreseeRefusal(undefined, "room/1", "chat"), undefined);
  assert.equal(foreseeRefusal("an-opaque-token", "room/1", "chat"), undefined);
  assert.equal(foreseeRefusal("a.bm90IGpzb24.c", "room/1", "chat"), undefined);
  // Not a sluice credential (an unknown claim): the server decides.
  const foreign = jwt({ tenant: "x", scopes: [] });
  assert.equal(foreseeRefusal(foreign, "room/1", "chat"), undefined);
});

Deno.test("the long-poll follows the track's Durable Streams URL, under any base path", () => {
  assert.equal(
    streamUrlOf(new URL("http://h:8090/tracks/room/1/chat")).href,
    "http://h:8090/v1/stream/room/1/chat",
  );
  assert.equal(
    streamUrlOf(new URL("https://h/base/tracks/room%2Fx/1/chat")).href,
    "https://h/base/v1/stream/room%2Fx/1/chat",
  );
});
