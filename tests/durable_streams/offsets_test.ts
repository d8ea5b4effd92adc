// Stream names, offsets and JSON message splitting: the mapping docs/durable-streams.md documents.
import assert from "node:assert/strict";
import { forkSourceName, streamTrack } from "../../src/durable_streams/names.ts";
import { formatOffset, parseOffset } from "../../src/durable_streams/offsets.ts";
import { appendData, splitArray } from "../../src/durable_streams/payload.ts";

Deno.test("names: several segments are a /tracks/ path, one segment gets the track 'stream'", () => {
  assert.deepEqual(streamTrack("room/1/chat"), { broadcast: ["room", "1"], track: "chat" });
  assert.deepEqual(streamTrack("orders"), { broadcast: ["orders"], track: "stream" });
  assert.deepEqual(streamTrack("a%20b"), { broadcast: ["a b"], track: "stream" });
  assert.throws(() => streamTrack("a/../b"), SyntaxError);
  assert.equal(forkSourceName("/v1/stream/src-1"), "src-1");
  assert.equal(forkSourceName("http://h:1/v1/stream/a/b"), "a/b");
});

Deno.test("offsets: epoch and group sequence, 16 digits each, sorting as text", () => {
  assert.equal(formatOffset(42), "0000000000000001_0000000000000042");
  assert.deepEqual(parseOffset(formatOffset(42)), { kind: "at", position: 42 });
  assert.deepEqual(parseOffset("-1"), { kind: "start" });
  assert.deepEqual(parseOffset(null), { kind: "start" });
  assert.deepEqual(parseOffset("now"), { kind: "now" });
  assert.deepEqual(parseOffset("0000000000000000_0000000000000000"), { kind: "start" });
  assert.throws(() => parseOffset("42"), SyntaxError);
  assert.throws(() => parseOffset("0000000000000001_00000000000000a2"), SyntaxError);
  const sorted = [9, 10, 100, 99999].map(formatOffset);
  assert.deepEqual([...sorted].sort(), sorted);
});

Deno.test("JSON appends: one level of arrays is flattened, element text kept exactly", () => {
  const enc = (t: string) => new TextEncoder().encode(t);
  assert.deepEqual(splitArray(`[ {"a":"],["} , 1.50, [1,2] ,"x\\"y"]`), [
    `{"a":"],["}`,
    "1.50",
    "[1,2]",
    `"x\\"y"`,
  ]);
  assert.deepEqual(appendData(true, enc(`{"k":1}`)), { payload: `{"k":1}`, count: 1 });
  assert.deepEqual(appendData(true, enc(`[[1,2]]`)), { payload: "[1,2]", count: 1 });
  assert.deepEqual(appendData(true, enc(`[1, 2]`)), { payload: "[1,2]", n: 2, count: 2 });
  assert.deepEqual(appendData(true, enc(`[]`)), { count: 0 });
  assert.throws(() => appendData(true, enc(`{nope`)), /not valid JSON/);
  assert.deepEqual(appendData(false, enc("ab")), { bytes: enc("ab"), count: 2 });
});
