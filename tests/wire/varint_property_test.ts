import assert from "node:assert/strict";
import {
  DecodeError,
  Decoder,
  decodeVarint,
  decodeVarintBig,
  Encoder,
  encodeVarint,
  StreamReader,
  VARINT_MAX,
  varintSize,
  zigzagDecode,
  zigzagEncode,
} from "../../src/wire/mod.ts";
import {
  check,
  checkAsync,
  chunkedStream,
  decodesOrRefuses,
  decodesOrRefusesAsync,
  fc,
} from "../support/property.ts";
import { settled } from "../support/wait.ts";

const varint = fc.bigInt({ min: 0n, max: VARINT_MAX });
const cuts = fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 64 });

Deno.test("property: a QUIC varint decodes to what was encoded, in its minimal size", () => {
  check(fc.property(varint, (v) => {
    const bytes = encodeVarint(v);
    assert.equal(bytes.length, varintSize(v));
    assert.deepEqual(decodeVarintBig(bytes, 0), { value: v, length: bytes.length });
    assert.equal(new Decoder(bytes).u62(), v);
    if (v <= BigInt(Number.MAX_SAFE_INTEGER)) {
      assert.equal(new Decoder(bytes).u53(), Number(v));
      assert.deepEqual(encodeVarint(Number(v)), bytes);
    }
  }));
});

Deno.test("property: any bytes decode as a varint or report that they end early", () => {
  check(fc.property(fc.uint8Array({ maxLength: 9 }), fc.nat(9), (bytes, at) => {
    const big = decodeVarintBig(bytes, at);
    const small = decodeVarint(bytes, at);
    const first = bytes[at];
    const fits = first !== undefined && at + (1 << (first >> 6)) <= bytes.length;
    assert.equal(big !== undefined, fits);
    assert.equal(small !== undefined, fits);
    if (big) {
      assert.ok(big.value <= VARINT_MAX);
      assert.equal(small?.length, big.length);
    }
    decodesOrRefuses(() => new Decoder(bytes).u53(), [DecodeError], bytes);
    decodesOrRefuses(() => new Decoder(bytes).u62(), [DecodeError], bytes);
  }));
});

Deno.test("property: zigzag maps every signed 62-bit value and back", () => {
  check(fc.property(fc.bigInt({ min: -(1n << 61n), max: (1n << 61n) - 1n }), (v) => {
    const z = zigzagEncode(v);
    assert.ok(z >= 0n && z <= VARINT_MAX);
    assert.equal(zigzagDecode(z), v);
  }));
});

Deno.test("property: the message decoder returns a value or a DecodeError for any bytes", () => {
  const op = fc.constantFrom("u8", "bool", "u53", "u62", "string", "lengthPrefixed", "end");
  check(fc.property(fc.uint8Array({ maxLength: 64 }), fc.array(op, { maxLength: 8 }), (b, ops) => {
    const d = new Decoder(b);
    decodesOrRefuses(
      () => {
        for (const o of ops) {
          if (o === "end") d.end("message");
          else if (o === "string") d.string("s", 16);
          else if (o === "lengthPrefixed") d.lengthPrefixed("b", 16);
          else d[o]();
        }
      },
      [DecodeError],
      b,
    );
    assert.ok(d.remaining >= 0 && d.remaining <= b.length);
  }));
});

type Field = { kind: "varint"; value: bigint } | { kind: "message"; value: Uint8Array };
const field: fc.Arbitrary<Field> = fc.oneof(
  varint.map((value) => ({ kind: "varint" as const, value })),
  fc.uint8Array({ maxLength: 300 }).map((value) => ({ kind: "message" as const, value })),
);

function encodeFields(fields: readonly Field[]): Uint8Array {
  const e = new Encoder();
  for (const f of fields) f.kind === "varint" ? e.varint(f.value) : e.lengthPrefixed(f.value);
  return e.finish();
}

Deno.test("property: a stream reader reads the same fields however the stream is cut", async () => {
  await checkAsync(fc.asyncProperty(fc.array(field, { maxLength: 12 }), cuts, async (fields, c) => {
    const r = new StreamReader(chunkedStream(encodeFields(fields), c));
    for (const f of fields) {
      if (f.kind === "varint") assert.equal(await r.u62(), f.value);
      else assert.deepEqual(await r.message("m", 300), f.value);
    }
    assert.equal(await r.done(), true);
  }));
});

Deno.test("property: a stream cut short or garbled gives values or a DecodeError, never more bytes than sent", async () => {
  const input = fc.tuple(fc.array(field, { maxLength: 6 }), fc.nat()).map(([fields, cut]) => {
    const bytes = encodeFields(fields);
    return bytes.subarray(0, bytes.length === 0 ? 0 : cut % bytes.length);
  });
  const bytes = fc.oneof(input, fc.uint8Array({ maxLength: 64 }));
  await checkAsync(fc.asyncProperty(bytes, cuts, async (b, c) => {
    const r = new StreamReader(chunkedStream(b, c));
    let read = 0;
    await decodesOrRefusesAsync(
      async () => {
        while (!(await r.done())) {
          const m = await r.message("m", 1 << 20);
          read += m.length;
        }
      },
      [DecodeError],
      b,
    );
    assert.ok(read <= b.length);
  }));
});

Deno.test("regression: a declared frame larger than what arrived is not allocated up front", async () => {
  // A peer declares a 64 MiB message, sends 1 KiB and holds the stream open.
  const declared = 64 << 20;
  const head = new Encoder().varint(declared).bytes(new Uint8Array(1024)).finish();
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull(c) {
      if (!sent) {
        sent = true;
        c.enqueue(head.slice());
      }
      // then nothing: the stream stays open
    },
  });
  const before = Deno.memoryUsage();
  const r = new StreamReader(stream);
  const pending = r.message("m", declared);
  await settled(20);
  const after = Deno.memoryUsage();
  const grown = after.external + after.heapUsed - before.external - before.heapUsed;
  assert.ok(grown < 8 << 20, `reader holds ${grown} bytes for 1 KiB received`);
  r.cancel();
  await assert.rejects(pending, DecodeError);
});
