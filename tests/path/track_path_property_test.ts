// Track paths against generated and hostile text.
import assert from "node:assert/strict";
import { parseTrackPath, trackKey } from "../../src/path/mod.ts";
import { check, decodesOrRefuses, fc } from "../support/property.ts";

Deno.test("property: track paths parse back from their encoded segments; any text parses or gives SyntaxError", () => {
  const segmentText = fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 })
    .filter((s) => s !== "." && s !== "..");
  check(fc.property(fc.array(segmentText, { minLength: 2, maxLength: 5 }), (segments) => {
    const raw = segments.map(encodeURIComponent).join("/");
    const path = decodesOrRefuses(() => parseTrackPath(raw), [SyntaxError], raw);
    if (!path) return; // a control character or backslash: refused by rule
    assert.deepEqual([...path.broadcast, path.track], segments);
    assert.equal(trackKey(path), segments.join("/"));
  }));
  const hostile = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.array(fc.constantFrom("a", "%", "%2F", "%2e", "/", "..", "%ZZ", "%E0%A4", "\\", "%00"), {
      maxLength: 12,
    }).map((parts) => parts.join("")),
  );
  check(fc.property(hostile, (raw) => {
    const path = decodesOrRefuses(() => parseTrackPath(raw), [SyntaxError], raw);
    if (!path) return;
    assert.ok(path.broadcast.length >= 1);
    for (const s of [...path.broadcast, path.track]) {
      assert.ok(s !== "" && s !== "." && s !== ".." && !s.includes("/") && !s.includes("\\"));
    }
  }));
});
