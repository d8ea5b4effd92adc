import assert from "node:assert/strict";
import { LruCache } from "../../src/cache/mod.ts";

Deno.test("LruCache: holds at most its capacity and tells onEvict of the least recently used", () => {
  const evicted: string[] = [];
  const cache = new LruCache<string, number>(2, { onEvict: (key) => evicted.push(key) });
  cache.set("a", 1);
  cache.set("b", 2);
  assert.equal(cache.get("a"), 1); // "b" is now the least recently used
  assert.ok(cache.has("b")); // has() does not count as a use
  cache.set("c", 3);
  assert.deepEqual(evicted, ["b"]);
  assert.equal(cache.size, 2);
  cache.delete("a");
  cache.clear();
  assert.deepEqual(evicted, ["b"], "delete and clear are not evictions");
  assert.throws(() => new LruCache(0), RangeError);
});
