import assert from "node:assert/strict";
import { parseTrackPatterns } from "../../src/path/mod.ts";

Deno.test("track patterns: a segment-aware broadcast prefix and a track name or *", () => {
  const p = parseTrackPatterns("room/chat, sensors/*, alerts, x/y/z");
  assert.ok(p.matches("room", "chat"));
  assert.ok(p.matches("room/1/2", "chat"));
  assert.ok(!p.matches("roomy", "chat"));
  assert.ok(!p.matches("room/1", "video"));
  assert.ok(p.matches("sensors/7", "anything"));
  assert.ok(p.matches("", "alerts"));
  assert.ok(p.matches("a/b", "alerts"));
  assert.equal(p.toString(), "room/chat,sensors/*,alerts,x/y/z");
  assert.ok(parseTrackPatterns("*").matches("any/where", "any"));
  assert.ok(!parseTrackPatterns("room/chat").empty);
});

Deno.test("track patterns: bad entries are a SyntaxError quoting the entry", () => {
  for (
    const bad of [
      "",
      "a,,b",
      "/room/chat",
      "x//y/z",
      "room/",
      "r*/chat",
      "room/./chat",
      "room/c\\h",
    ]
  ) {
    assert.throws(() => parseTrackPatterns(bad), SyntaxError, bad);
  }
  assert.throws(
    () => parseTrackPatterns("ro*om/chat"),
    /"ro\*om\/chat": broadcast prefix has a wildcard/,
  );
});
