import assert from "node:assert/strict";
import {
  Decoder,
  decodeVarint,
  decodeVarintBig,
  encodeVarint,
  VARINT_MAX,
  varintSize,
  writeVarint,
  zigzagDecode,
  zigzagEncode,
} from "../../src/wire/mod.ts";
import { assertDecodeError } from "../support/decode_error.ts";

const spaced = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
const bytes = (s: string) =>
  Uint8Array.from(s.split(/\s+/).filter(Boolean), (x) => parseInt(x, 16));

Deno.test("varints round-trip at every length boundary", () => {
  for (const v of [0, 63, 64, 16383, 16384, 1073741823, 1073741824, 2 ** 53 - 1]) {
    const enc = encodeVarint(v);
    assert.deepEqual(decodeVarint(enc, 0), { value: v, length: enc.length });
  }
  assert.deepEqual(encodeVarint(0x41), bytes("40 41"));
  assert.deepEqual(encodeVarint(0x54), bytes("40 54"));
  assert.equal(decodeVarintBig(encodeVarint((1n << 62n) - 1n), 0)?.value, (1n << 62n) - 1n);
  assert.equal(decodeVarint(bytes("40"), 0), undefined, "truncated varint is not decoded");
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
  assert.deepEqual(out.subarray(0, 7), bytes("ee ee 80 00 40 00 ee"));
  for (const v of [0, 1, 63, 64, 16383, 16384, 2 ** 30, Number.MAX_SAFE_INTEGER]) {
    assert.deepEqual(encodeVarint(v), encodeVarint(BigInt(v)));
    assert.equal(decodeVarintBig(encodeVarint(v), 0)?.value, BigInt(v));
  }
  // A varint that does not fit a safe integer decodes approximately as a number, exactly as a bigint.
  const big = encodeVarint(VARINT_MAX);
  assert.equal(decodeVarint(big, 0)?.value, Number(VARINT_MAX));
  assert.equal(decodeVarintBig(big, 0)?.value, VARINT_MAX);
  assert.equal(decodeVarintBig(bytes("c0 00"), 0), undefined, "truncated varint is not decoded");
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

Deno.test("varints: minimal encodings, the 2^62 boundary, 2^53 reads", () => {
  assert.equal(spaced(encodeVarint(0)), "00");
  assert.equal(spaced(encodeVarint(63)), "3f");
  assert.equal(spaced(encodeVarint(64)), "40 40");
  assert.equal(spaced(encodeVarint(16383)), "7f ff");
  assert.equal(spaced(encodeVarint(16384)), "80 00 40 00");
  assert.equal(spaced(encodeVarint(2 ** 30)), "c0 00 00 00 40 00 00 00");
  assert.equal(spaced(encodeVarint(VARINT_MAX)), "ff ff ff ff ff ff ff ff");
  assert.throws(() => encodeVarint(VARINT_MAX + 1n), RangeError);
  assert.throws(() => encodeVarint(-1), RangeError);
  assert.throws(() => encodeVarint(1.5), RangeError);
  for (
    const v of [
      0n,
      1n,
      63n,
      64n,
      16383n,
      16384n,
      (1n << 30n) - 1n,
      1n << 30n,
      1n << 53n,
      VARINT_MAX,
    ]
  ) {
    assert.equal(new Decoder(encodeVarint(v)).u62(), v);
  }
  assert.equal(new Decoder(encodeVarint(Number.MAX_SAFE_INTEGER)).u53(), Number.MAX_SAFE_INTEGER);
  assertDecodeError(() => new Decoder(encodeVarint(1n << 53n)).u53(), "invalid");
  // Non-minimal encodings are accepted on read.
  assert.equal(new Decoder(bytes("c0 00 00 00 00 00 00 05")).u53(), 5);
  // Truncated varints.
  assertDecodeError(() => new Decoder(bytes("40")).u53(), "truncated");
  assertDecodeError(() => new Decoder(bytes("c0 00 00")).u62(), "truncated");
  assertDecodeError(() => new Decoder(new Uint8Array(0)).u62(), "truncated");
});
