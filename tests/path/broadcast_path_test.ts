import assert from "node:assert/strict";
import {
  joinPath,
  MAX_PATH_BYTES,
  normalizePath,
  pathProblem,
  pathSuffix,
  prefixCovers,
  segmentProblem,
  trackNameProblem,
} from "../../src/path/mod.ts";

Deno.test("normalizePath drops outer slashes and empty segments", () => {
  assert.equal(normalizePath("/demo/cam1"), "demo/cam1");
  assert.equal(normalizePath("demo//cam1/"), "demo/cam1");
  assert.equal(normalizePath("/"), "");
  assert.equal(normalizePath(""), "");
});

// Moved from tests/auth/grant_test.ts (auth re-exports this prefixCovers), with two more cases.
Deno.test("a prefix covers itself and what follows a slash, not a longer segment", () => {
  assert.ok(prefixCovers("a/b", "a/b"));
  assert.ok(prefixCovers("a/b", "a/b/c"));
  assert.ok(!prefixCovers("a/b", "a/bc"));
  assert.ok(!prefixCovers("a/b", "a"));
  assert.ok(!prefixCovers("a/b", "x/a/b"));
  assert.ok(prefixCovers("", "anything/at/all"));
  assert.ok(prefixCovers("", ""));
  assert.ok(!prefixCovers("a", ""));
});

Deno.test("joinPath gives a canonical path from any prefix and suffix", () => {
  assert.equal(joinPath("room", "1"), "room/1");
  assert.equal(joinPath("", "room/1"), "room/1");
  assert.equal(joinPath("room", ""), "room");
  assert.equal(joinPath("", ""), "");
  assert.equal(joinPath("room", "/1/"), "room/1");
  assert.equal(joinPath("/room/", "1"), "room/1");
});

Deno.test("pathSuffix is what follows the prefix", () => {
  assert.equal(pathSuffix("room/1/cam", "room"), "1/cam");
  assert.equal(pathSuffix("room", "room"), "");
  assert.equal(pathSuffix("room/1", ""), "room/1");
  assert.equal(joinPath("room", pathSuffix("room/1/cam", "room")), "room/1/cam");
});

Deno.test("pathProblem refuses what credentials must not name, and says why", () => {
  assert.equal(pathProblem("room/1", false), undefined);
  assert.equal(pathProblem("", true), undefined);
  assert.equal(pathProblem("", false), "is empty");
  assert.match(pathProblem("/room", true)!, /leading slash/);
  assert.equal(pathProblem("room/", true), "ends with a slash");
  assert.equal(pathProblem("a//b", true), "has an empty segment");
  assert.equal(pathProblem("a/../b", true), 'has a ".." segment');
  assert.equal(pathProblem("a/./b", true), 'has a "." segment');
  assert.equal(pathProblem("a\u0000b", true), "contains a control character");
  assert.equal(pathProblem("a\u007fb", true), "contains a control character");
  assert.equal(pathProblem("a\u0085b", true), "contains a control character");
  assert.equal(pathProblem("a\\b", true), "contains a backslash");
  assert.equal(pathProblem("é".repeat(MAX_PATH_BYTES / 2), true), undefined);
  assert.equal(
    pathProblem("é".repeat(MAX_PATH_BYTES / 2 + 1), true),
    `is longer than ${MAX_PATH_BYTES} bytes`,
  );
});

Deno.test("segmentProblem states one segment's fault as a sentence", () => {
  assert.equal(segmentProblem("room"), undefined);
  assert.equal(segmentProblem("caf\u00e9 1"), undefined);
  assert.equal(segmentProblem(""), "a segment is empty");
  assert.equal(segmentProblem(".."), 'segment ".." is not allowed');
  assert.equal(segmentProblem("a/b"), "a segment contains an encoded slash");
  assert.equal(segmentProblem("a\\b"), "a segment contains a backslash");
  assert.equal(segmentProblem("a\u009fb"), "a segment contains a control character");
  assert.equal(segmentProblem("a\nb"), "a segment contains a control character");
});

Deno.test("trackNameProblem refuses slashes, dots, controls and backslashes", () => {
  assert.equal(trackNameProblem("chat"), undefined);
  assert.equal(trackNameProblem(""), "is empty");
  assert.equal(trackNameProblem("a/b"), "contains a slash");
  assert.equal(trackNameProblem("."), 'is "."');
  assert.equal(trackNameProblem("a\tb"), "contains a control character");
  assert.equal(trackNameProblem("a\\b"), "contains a backslash");
  assert.equal(
    trackNameProblem("x".repeat(MAX_PATH_BYTES + 1)),
    `is longer than ${MAX_PATH_BYTES} bytes`,
  );
});
