// HTTP/3 decoders against generated and hostile bytes: Huffman, QPACK,
// SETTINGS, frames on request and control streams, capsules and the
// structured fields of WT-Protocol.
import assert from "node:assert/strict";
import { huffmanDecode, huffmanEncode } from "../../../src/transport/h3/huffman.ts";
import {
  decodeFieldSection,
  encodeFieldSection,
  fieldSectionSize,
  type HeaderField,
  HeaderTooLargeError,
  QpackError,
} from "../../../src/transport/h3/qpack.ts";
import { decodeSettings, encodeSettings } from "../../../src/transport/h3/settings.ts";
import { encodeFrame, FrameType } from "../../../src/transport/h3/frame.ts";
import { readHeaders } from "../../../src/transport/h3/headers.ts";
import { ControlStreams } from "../../../src/transport/h3/control_stream.ts";
import { H3ConnectionError } from "../../../src/transport/h3/errors.ts";
import {
  type Capsule,
  CapsuleParser,
  CapsuleType,
  decodeCloseCapsule,
  encodeCapsule,
  encodeCloseCapsule,
} from "../../../src/transport/webtransport/capsule.ts";
import {
  parseStringList,
  serializeStringList,
} from "../../../src/transport/h3/structured_field.ts";
import { concatBytes, DecodeError, StreamReader } from "../../../src/wire/mod.ts";
import {
  check,
  checkAsync,
  chunkedStream,
  decodesOrRefuses,
  decodesOrRefusesAsync,
  fc,
  hostileBytes,
} from "../../support/property.ts";

const cuts = fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 32 });
const fieldName = fc.oneof(
  fc.constantFrom(":method", ":path", ":status", "origin", "wt-protocol", "content-type"),
  fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 20 }).map((s) => s.toLowerCase()),
);
const field: fc.Arbitrary<HeaderField> = fc.tuple(
  fieldName,
  fc.oneof(
    fc.constantFrom("200", "CONNECT", "https"),
    fc.string({ unit: "grapheme", maxLength: 60 }),
  ),
);
const fields = fc.array(field, { maxLength: 12 });

Deno.test("property: Huffman decodes what it encodes; any bytes decode or give SyntaxError", () => {
  check(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
    assert.deepEqual(huffmanDecode(huffmanEncode(bytes)), bytes);
  }));
  check(fc.property(hostileBytes(fc.uint8Array({ maxLength: 64 }).map(huffmanEncode)), (bytes) => {
    const out = decodesOrRefuses(() => huffmanDecode(bytes), [SyntaxError], bytes);
    // The shortest code is 5 bits: output is at most 8/5 of the input.
    if (out) assert.ok(out.length <= Math.ceil((bytes.length * 8) / 5));
  }));
});

Deno.test("property: QPACK decodes what it encodes; any section decodes or is refused, within the size limit", () => {
  check(
    fc.property(fields, (fs) => {
      assert.deepEqual(decodeFieldSection(encodeFieldSection(fs), 1 << 20), fs);
    }),
    500,
  );
  check(
    fc.property(hostileBytes(fields.map(encodeFieldSection)), (bytes) => {
      const out = decodesOrRefuses(
        () => decodeFieldSection(bytes, 4096),
        [QpackError, HeaderTooLargeError],
        bytes,
      );
      if (out) assert.ok(fieldSectionSize(out) <= 4096);
    }),
    2000,
  );
});

Deno.test("regression: a QPACK integer of zero continuation bytes is refused, not read as NaN", () => {
  // :path (static name 1) with a value length of 127 + 250 zero continuation bytes.
  const section = Uint8Array.from([0, 0, 0x51, 0x7f, ...Array(250).fill(0x80), 0x00]);
  assert.throws(() => decodeFieldSection(section, 4096), QpackError);
});

Deno.test("property: SETTINGS decode to what was encoded; any payload decodes or is a connection error", () => {
  const id = fc.bigInt({ min: 0n, max: (1n << 62n) - 1n }).filter((v) => v < 2n || v > 5n);
  const pairs = fc.uniqueArray(fc.tuple(id, fc.bigInt({ min: 0n, max: 1n })), {
    selector: ([i]) => i,
    maxLength: 10,
  });
  check(fc.property(pairs, (ps) => {
    assert.deepEqual([...decodeSettings(encodeSettings(ps))], ps);
  }));
  check(fc.property(hostileBytes(pairs.map(encodeSettings)), (bytes) => {
    decodesOrRefuses(() => decodeSettings(bytes), [H3ConnectionError], bytes);
  }));
});

Deno.test("property: request-stream HEADERS are found after unknown frames however the stream is cut", async () => {
  const grease = fc.array(
    fc.tuple(
      fc.integer({ min: 0x21, max: 0x3f }).map((n) => n * 0x1f + 0x21),
      fc.uint8Array({ maxLength: 30 }),
    ),
    { maxLength: 3 },
  );
  await checkAsync(fc.asyncProperty(fields, grease, cuts, async (fs, gs, c) => {
    const wire = concatBytes([
      ...gs.map(([type, payload]) => encodeFrame(type, payload)),
      encodeFrame(FrameType.HEADERS, encodeFieldSection(fs)),
    ]);
    assert.deepEqual(await readHeaders(new StreamReader(chunkedStream(wire, c)), 1 << 20), fs);
  }));
});

Deno.test("property: any request-stream bytes give headers, nothing, or a typed error", async () => {
  const valid = fields.map((fs) => encodeFrame(FrameType.HEADERS, encodeFieldSection(fs)));
  await checkAsync(
    fc.asyncProperty(hostileBytes(valid), cuts, async (bytes, c) => {
      const out = await decodesOrRefusesAsync(
        () => readHeaders(new StreamReader(chunkedStream(bytes, c)), 4096),
        [H3ConnectionError, HeaderTooLargeError, DecodeError],
        bytes,
      );
      if (out) assert.ok(fieldSectionSize(out) <= 4096);
    }),
    1000,
  );
});

Deno.test("property: any control-stream bytes end in an HTTP/3 connection error, never another", async () => {
  const settings = encodeFrame(FrameType.SETTINGS, encodeSettings([[6n, 16384n], [8n, 1n]]));
  const valid = fc.array(
    fc.tuple(fc.integer({ min: 0, max: 0x40 }), fc.uint8Array({ maxLength: 20 })),
    {
      maxLength: 4,
    },
  ).map((frames) => concatBytes([settings, ...frames.map(([t, p]) => encodeFrame(t, p))]));
  await checkAsync(
    fc.asyncProperty(hostileBytes(valid), cuts, async (bytes, c) => {
      const control = new ControlStreams("server", { isClosed: false });
      // A control stream that ends is itself a connection error: every run must throw one.
      await assert.rejects(
        control.readControl(new StreamReader(chunkedStream(bytes, c))),
        (err: unknown) => {
          if (err instanceof H3ConnectionError) return true;
          throw new Error(`Control stream threw ${err} for ${bytes}`);
        },
      );
    }),
    500,
  );
});

Deno.test("property: capsules parse the same however DATA cuts them; hostile bytes parse or are refused", () => {
  const capsule = fc.oneof(
    fc.record({
      type: fc.constant("close" as const),
      code: fc.nat({ max: 0xffffffff }),
      reason: fc.string({ unit: "grapheme", maxLength: 50 }),
    }, { noNullPrototype: true }),
    fc.constant({ type: "drain" as const }),
    fc.record({ type: fc.constant("grease" as const), value: fc.uint8Array({ maxLength: 40 }) }),
  );
  const encode = (c: { type: string; code?: number; reason?: string; value?: Uint8Array }) =>
    c.type === "close"
      ? encodeCloseCapsule(c.code!, c.reason!)
      : c.type === "drain"
      ? encodeCapsule(CapsuleType.DRAIN_WEBTRANSPORT_SESSION, new Uint8Array(0))
      : encodeCapsule(0x29 * 0x1f + 0x17, c.value!);
  const split = (bytes: Uint8Array, c: readonly number[]) => {
    const parts: Uint8Array[] = [];
    let at = 0;
    for (const n of c) {
      if (at >= bytes.length) break;
      parts.push(bytes.subarray(at, at + n));
      at += n;
    }
    if (at < bytes.length) parts.push(bytes.subarray(at));
    return parts;
  };
  check(fc.property(fc.array(capsule, { maxLength: 6 }), cuts, (cs, c) => {
    const parser = new CapsuleParser();
    const got: Capsule[] = [];
    for (const part of split(concatBytes(cs.map(encode)), c)) got.push(...parser.push(part));
    assert.deepEqual(got, cs.filter((x) => x.type !== "grease"));
  }));
  const valid = fc.array(capsule, { maxLength: 4 }).map((cs) => concatBytes(cs.map(encode)));
  check(fc.property(hostileBytes(valid), cuts, (bytes, c) => {
    const parser = new CapsuleParser();
    decodesOrRefuses(
      () => {
        for (const part of split(bytes, c)) parser.push(part);
      },
      [H3ConnectionError],
      bytes,
    );
  }));
});

Deno.test("regression: a close capsule whose reason is not UTF-8 is a SyntaxError, as documented", () => {
  assert.throws(() => decodeCloseCapsule(Uint8Array.of(0, 0, 0, 1, 0xff)), SyntaxError);
});

Deno.test("property: WT-Protocol string lists parse back; any text parses or gives SyntaxError", () => {
  const token = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: 20,
  });
  check(fc.property(fc.array(token, { maxLength: 5 }), (list) => {
    assert.deepEqual(parseStringList(serializeStringList(list)), list);
  }));
  check(fc.property(fc.string({ maxLength: 60 }), (text) => {
    decodesOrRefuses(() => parseStringList(text), [SyntaxError], text);
  }));
});
