import assert from "node:assert/strict";
import {
  decodeVarint,
  decodeVarintBig,
  encodeVarint,
  VARINT_MAX,
  varintSize,
  writeVarint,
  zigzagDecode,
  zigzagEncode,
} from "../../src/wire/mod.ts";

const hex = (s: string): Uint8Array =>
  Uint8Array.from(s.replace(/\s+/g, "").match(/../g)?.map((b) => parseInt(b, 16)) ?? []);

Deno.test("varints round-trip at every length boundary", () => {
  for (const v of [0, 63, 64, 16383, 16384, 1073741823, 1073741824, 2 ** 53 - 1]) {
    const enc = encodeVarint(v);
    assert.deepEqual(decodeVarint(enc, 0), { value: v, length: enc.length });
  }
  assert.deepEqual(encodeVarint(0x41), hex("4041"));
  assert.deepEqual(encodeVarint(0x54), hex("4054"));
  assert.equal(decodeVarintBig(encodeVarint((1n << 62n) - 1n), 0)?.value, (1n << 62n) - 1n);
  assert.equal(decodeVarint(hex("40"), 0), undefined, "truncated varint is not decoded");
});

Deno.test("varints: sizes, writes at an offset, numbers and bigints agree", () => {
  assert.deepEqual([0, 63, 64, 16383, 16384, 2 ** 30 - 1, 2 ** 30].map(varintSize), [
    1,
    1,
    2,
    2,
    4,
    4,
    8,
  ]);
  assert.equal(varintSize(VARINT_MAX), 8);
  assert.throws(() => varintSize(VARINT_MAX + 1n), RangeError);
  assert.throws(() => varintSize(2 ** 53), RangeError);
  const out = new Uint8Array(12).fill(0xee);
  assert.equal(writeVarint(out, 2, 16384), 6);
  assert.deepEqual(out.subarray(0, 7), hex("eeee 80004000 ee"));
  for (const v of [0, 1, 63, 64, 16383, 16384, 2 ** 30, Number.MAX_SAFE_INTEGER]) {
    assert.deepEqual(encodeVarint(v), encodeVarint(BigInt(v)));
    assert.equal(decodeVarintBig(encodeVarint(v), 0)?.value, BigInt(v));
  }
  // A varint that does not fit a safe integer decodes approximately as a number, exactly as a bigint.
  const big = encodeVarint(VARINT_MAX);
  assert.equal(decodeVarint(big, 0)?.value, Number(VARINT_MAX));
  assert.equal(decodeVarintBig(big, 0)?.value, VARINT_MAX);
  assert.equal(decodeVarintBig(hex("c0 00"), 0), undefined, "truncated varint is not decoded");
});

Deno.test("zigzag matches the captured vectors", () => {
  const cases: [bigint, bigint][] = [[0n, 0n], [-1n, 1n], [1n, 2n], [-2n, 3n], [1000n, 2000n], [
    -5n,
    9n,
  ], [1033n, 2066n]];
  for (const [s, u] of cases) {
    assert.equal(zigzagEncode(s), u);
    assert.equal(zigzagDecode(u), s);
  }
});
