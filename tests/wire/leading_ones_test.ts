// The leading-ones varint of draft-ietf-moq-transport 17+: known encodings
// at each length boundary, and round trips.
import assert from "node:assert/strict";
import { decodeLeadingOnes, encodeLeadingOnes, leadingOnesSize } from "../../src/wire/mod.ts";

const hex = (b: Uint8Array): string => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("leading-ones varint: the shortest form at each length boundary", () => {
  const cases: Array<[bigint, string]> = [
    [0n, "00"],
    [127n, "7f"],
    [128n, "8080"],
    [0x2f00n, "af00"], // the SETUP stream type
    [(1n << 14n) - 1n, "bfff"],
    [1n << 14n, "c04000"],
    [(1n << 21n) - 1n, "dfffff"],
    [1n << 21n, "e0200000"],
    [(1n << 42n) - 1n, "fbffffffffff"],
    [1n << 42n, "fe00040000000000"], // 7 bytes is skipped: 8 bytes, 56 bits
    [(1n << 56n) - 1n, "feffffffffffffff"],
    [1n << 56n, "ff0100000000000000"],
    [(1n << 64n) - 1n, "ffffffffffffffffff"],
  ];
  for (const [value, want] of cases) {
    const got = encodeLeadingOnes(value);
    assert.equal(hex(got), want, `encode ${value}`);
    assert.equal(leadingOnesSize(got[0]!), got.length);
    assert.equal(decodeLeadingOnes(got), value, `decode ${want}`);
  }
});

Deno.test("leading-ones varint: round trips, and refuses what it cannot hold", () => {
  for (let bits = 0n; bits < 64n; bits++) {
    for (const v of [1n << bits, (1n << bits) - 1n, (1n << bits) + 1n]) {
      if (v >= 1n << 64n) continue;
      assert.equal(decodeLeadingOnes(encodeLeadingOnes(v)), v);
    }
  }
  assert.throws(() => encodeLeadingOnes(-1), RangeError);
  assert.throws(() => encodeLeadingOnes(1n << 64n), RangeError);
  assert.throws(() => decodeLeadingOnes(new Uint8Array([0x80])), /1 of 2 bytes/);
  // The reserved 7-byte form still decodes (draft 18 allows it).
  assert.equal(decodeLeadingOnes(new Uint8Array([0xfd, 0, 0, 0, 0, 0, 1])), (1n << 48n) + 1n);
});
