import assert from "node:assert/strict";
import {
  AuthError,
  type Grant,
  parseScope,
  requireAllowed,
  type Scope,
  unrestrictedGrant,
} from "../../src/auth/mod.ts";
import { ScopedGrant } from "../../src/auth/grant.ts";

function grant(scopes: unknown[], keyPrefix?: string): Grant {
  return new ScopedGrant(
    scopes.map((scope, index) => parseScope(scope, `scopes[${index}]`)),
    0,
    undefined,
    keyPrefix,
  );
}

Deno.test("broadcast prefix scopes respect segment boundaries", () => {
  const g = grant([{ actions: ["post"], broadcast: { prefix: "a/b" } }]);
  assert.ok(g.allows("post", "a/b", "t"));
  assert.ok(g.allows("post", "a/b/c", "t"));
  assert.ok(!g.allows("post", "a/bc", "t"));
  assert.ok(!g.allows("post", "a", "t"));
});

Deno.test("exact broadcast scopes cover only that path", () => {
  const g = grant([{ actions: ["fetch"], broadcast: { exact: "a/b" } }]);
  assert.ok(g.allows("fetch", "a/b", "t"));
  assert.ok(!g.allows("fetch", "a/b/c", "t"));
  assert.ok(!g.allows("fetch", "a", "t"));
});

Deno.test("an empty prefix covers every broadcast", () => {
  const g = grant([{ actions: ["subscribe"], broadcast: { prefix: "" } }]);
  assert.ok(g.allows("subscribe", "x", "t"));
  assert.ok(g.allows("subscribe", "x/y/z"));
  assert.ok(!g.allows("publish", "x"));
});

Deno.test("a track scope covers only that track; without track every track", () => {
  const g = grant([
    { actions: ["post"], broadcast: { exact: "room/1" }, track: { exact: "chat" } },
    { actions: ["fetch"], broadcast: { exact: "room/1" } },
  ]);
  assert.ok(g.allows("post", "room/1", "chat"));
  assert.ok(!g.allows("post", "room/1", "chatter"));
  assert.ok(!g.allows("post", "room/1", "other"));
  assert.ok(g.allows("fetch", "room/1", "other"));
  // The broadcast as a whole: reachable when some track of it is.
  assert.ok(g.allows("post", "room/1"));
  assert.ok(!g.allows("post", "room/2"));
});

Deno.test("actions are not implied by one another", () => {
  const publish = grant([{ actions: ["publish"], broadcast: { prefix: "" } }]);
  assert.ok(!publish.allows("post", "a", "t"), "a publish scope does not post");
  const post = grant([{ actions: ["post"], broadcast: { prefix: "" } }]);
  assert.ok(!post.allows("publish", "a", "t"), "a post scope does not publish");
  assert.ok(!post.allows("redact", "a", "t"), "a post scope does not redact");
  assert.ok(!post.allows("fetch", "a", "t"));
});

Deno.test("the key's prefix confines every scope", () => {
  const g = grant([{ actions: ["post"], broadcast: { prefix: "" } }], "a/b");
  assert.ok(g.allows("post", "a/b", "t"));
  assert.ok(g.allows("post", "a/b/c", "t"));
  assert.ok(!g.allows("post", "a/bc", "t"));
  assert.ok(!g.allows("post", "z", "t"));
  const outside = grant([{ actions: ["post"], broadcast: { exact: "z" } }], "a");
  assert.ok(!outside.allows("post", "z", "t"));
  const empty = grant([{ actions: ["post"], broadcast: { exact: "z" } }], "");
  assert.ok(empty.allows("post", "z", "t"), "an empty key prefix confines nothing");
});

Deno.test("parseScope keeps what it was given and drops duplicate actions", () => {
  const scope: Scope = parseScope({
    actions: ["post", "post", "redact"],
    broadcast: { prefix: "a" },
    track: { exact: "t" },
  });
  assert.deepEqual(scope, {
    actions: ["post", "redact"],
    broadcast: { prefix: "a" },
    track: { exact: "t" },
  });
  assert.throws(
    () => parseScope({ actions: ["post"], broadcast: { exact: "/a" } }),
    /leading slash/,
  );
});

Deno.test("the unrestricted grant allows everything and names no sender", () => {
  const g = unrestrictedGrant();
  assert.equal(g.sub, undefined);
  assert.ok(g.allows("redact", "a/b", "c"));
});

Deno.test("requireAllowed throws a 403 naming what was refused", () => {
  const g = grant([{
    actions: ["post"],
    broadcast: { exact: "room/1" },
    track: { exact: "chat" },
  }]);
  requireAllowed(g, "post", "room/1", "chat");
  assert.throws(
    () => requireAllowed(g, "redact", "room/1", "chat"),
    (error: unknown) =>
      error instanceof AuthError && error.status === 403 && error.code === "forbidden" &&
      error.message ===
        'The credential does not allow redact on track "chat" of broadcast "room/1"',
  );
});
