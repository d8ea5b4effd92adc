import assert from "node:assert/strict";
import { type OpenStream, OpenStreams } from "../../../src/moq/session/open_streams.ts";

function sends(list: OpenStreams<string>): string[] {
  return [...list].map((s) => s.send);
}

Deno.test("open streams: oldest first; taking one out of the middle, the front or the back keeps the rest in order", () => {
  const list = new OpenStreams<string>();
  const [a, b, c, d] = ["a", "b", "c", "d"].map((s, i) => list.add(s, i, false));
  assert.deepEqual(sends(list), ["a", "b", "c", "d"]);
  assert.deepEqual([...list].map((s) => s.place), [0, 1, 2, 3]);
  list.remove(b!);
  assert.deepEqual(sends(list), ["a", "c", "d"]);
  list.remove(a!);
  assert.deepEqual(sends(list), ["c", "d"]);
  list.remove(d!);
  assert.deepEqual(sends(list), ["c"]);
  const e = list.add("e", 4, false);
  assert.deepEqual(sends(list), ["c", "e"]);
  list.remove(c!);
  list.remove(e);
  assert.deepEqual(sends(list), []);
  assert.equal(list.size, 0);
  list.add("f", 5, false);
  assert.deepEqual(sends(list), ["f"]);
});

Deno.test("open streams: a stream taken out twice, or after its neighbours, changes nothing more", () => {
  const list = new OpenStreams<string>();
  const a = list.add("a", 0, false);
  const b = list.add("b", 0, false);
  list.remove(a);
  list.remove(a);
  assert.equal(list.size, 1);
  assert.deepEqual(sends(list), ["b"]);
  list.remove(b);
  list.remove(b);
  assert.equal(list.size, 0);
  assert.deepEqual(sends(list), []);
});

Deno.test("open streams: a stream taken out holds no other, so an ended send keeps none of the others alive", () => {
  const list = new OpenStreams<string>();
  const entries: OpenStream<string>[] = [];
  for (let i = 0; i < 5; i++) entries.push(list.add(`s${i}`, i, false));
  for (const entry of entries) {
    list.remove(entry);
    assert.equal(entry.prev, undefined);
    assert.equal(entry.next, undefined);
  }
});

Deno.test("open streams: only streams that may expire count as expiring, once each, until settled or taken out", () => {
  const list = new OpenStreams<string>();
  const a = list.add("a", 0, true);
  const b = list.add("b", 0, false);
  const c = list.add("c", 0, true);
  assert.equal(list.expiring, 2);
  list.settle(a);
  list.settle(a);
  assert.equal(list.expiring, 1);
  assert.equal(a.expires, false);
  list.remove(a);
  list.remove(b);
  assert.equal(list.expiring, 1);
  list.remove(c);
  assert.equal(list.expiring, 0);
  assert.equal(list.size, 0);
});

Deno.test("open streams: the stream being visited may be taken out, and the visit goes on with the next", () => {
  const list = new OpenStreams<string>();
  for (const s of ["a", "b", "c"]) list.add(s, 0, false);
  const visited: string[] = [];
  for (const entry of list) {
    visited.push(entry.send);
    list.remove(entry);
  }
  assert.deepEqual(visited, ["a", "b", "c"]);
  assert.equal(list.size, 0);
});
