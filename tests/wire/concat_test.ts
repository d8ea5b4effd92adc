import assert from "node:assert/strict";
import { concatBytes } from "../../src/wire/mod.ts";

Deno.test("concatBytes joins parts in order into a fresh array", () => {
  const a = Uint8Array.of(1, 2);
  const b = new Uint8Array(0);
  const c = Uint8Array.of(3);
  const out = concatBytes([a, b, c]);
  assert.deepEqual(out, Uint8Array.of(1, 2, 3));
  out[0] = 9;
  assert.equal(a[0], 1, "the result does not alias its parts");
  assert.deepEqual(concatBytes([]), new Uint8Array(0));
  // A view's own window is copied, not its whole buffer.
  assert.deepEqual(concatBytes([Uint8Array.of(5, 6, 7).subarray(1, 2)]), Uint8Array.of(6));
});
