import assert from "node:assert/strict";
import { Encoder } from "../../src/wire/mod.ts";

Deno.test("Encoder grows past its first capacity and length-prefixes nested messages", () => {
  const inner = new Encoder(1).bytes(new Uint8Array(100).fill(9));
  const out = new Encoder(2).u8(1).message(inner).string("ok").finish();
  assert.equal(out.length, 1 + 2 + 100 + 1 + 2);
  assert.deepEqual(out.subarray(0, 3), Uint8Array.of(1, 0x40, 100));
  assert.ok(out.subarray(3, 103).every((b) => b === 9));
  assert.deepEqual(out.subarray(103), Uint8Array.of(2, 0x6f, 0x6b));
});

Deno.test("Encoder refuses a byte outside 0..255", () => {
  assert.throws(() => new Encoder().u8(256), RangeError);
  assert.throws(() => new Encoder().u8(-1), RangeError);
  assert.throws(() => new Encoder().u8(1.5), RangeError);
});
