import assert from "node:assert/strict";
import { DecodeError, Decoder, Encoder } from "../../src/wire/mod.ts";

function decodeError(kind: DecodeError["code"]): (err: unknown) => boolean {
  return (err) => err instanceof DecodeError && err.code === kind;
}

Deno.test("Decoder reads fields in order and checks the whole body was read", () => {
  const body = new Encoder().u8(7).bool(true).string("hé").lengthPrefixed(Uint8Array.of(1, 2))
    .varint(300).finish();
  const d = new Decoder(body);
  assert.equal(d.u8(), 7);
  assert.equal(d.bool(), true);
  assert.equal(d.string(), "hé");
  assert.deepEqual(d.lengthPrefixed(), Uint8Array.of(1, 2));
  assert.equal(d.remaining, 2);
  assert.deepEqual(d.rest(), Uint8Array.of(0x41, 0x2c));
  d.end("message");
});

Deno.test("Decoder refuses bad peers' bytes with a DecodeError of the right kind", () => {
  assert.throws(() => new Decoder(Uint8Array.of(2)).bool(), decodeError("invalid"));
  assert.throws(() => new Decoder(Uint8Array.of(1, 0xff)).string(), decodeError("invalid"));
  assert.throws(() => new Decoder(Uint8Array.of(5, 1)).lengthPrefixed(), decodeError("truncated"));
  assert.throws(
    () => new Decoder(Uint8Array.of(3, 1, 2, 3)).lengthPrefixed("blob", 2),
    decodeError("too_large"),
  );
  assert.throws(() => new Decoder(Uint8Array.of(1, 2)).end("x"), decodeError("trailing"));
  assert.throws(() => new Decoder(new Uint8Array(0)).u8(), decodeError("truncated"));
});
