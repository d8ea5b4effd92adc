import assert from "node:assert/strict";
import { huffmanDecode, huffmanEncode } from "../../../src/transport/h3/huffman.ts";
import {
  decodeFieldSection,
  encodeFieldSection,
  HeaderTooLargeError,
  QpackError,
} from "../../../src/transport/h3/qpack.ts";
import { decodeSettings } from "../../../src/transport/h3/settings.ts";
import {
  parseStringItem,
  parseStringList,
  serializeString,
} from "../../../src/transport/h3/structured_field.ts";
import {
  decodeCloseCapsule,
  encodeCloseCapsule,
} from "../../../src/transport/webtransport/capsule.ts";
import { encodeFrame } from "../../../src/transport/h3/frame.ts";
import {
  H3Code,
  H3ConnectionError,
  wtErrorFromHttp3,
  wtErrorToHttp3,
} from "../../../src/transport/webtransport/mod.ts";
import { streamErrorCode } from "../../../src/transport/webtransport/mod.ts";

const hex = (s: string): Uint8Array =>
  Uint8Array.from(s.replace(/\s+/g, "").match(/../g)?.map((b) => parseInt(b, 16)) ?? []);
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

Deno.test("Huffman matches the RFC 7541 C.4 vectors", () => {
  const vectors: [string, string][] = [
    ["www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"],
    ["no-cache", "a8eb10649cbf"],
    ["custom-key", "25a849e95ba97d7f"],
  ];
  for (const [plain, coded] of vectors) {
    assert.deepEqual(huffmanEncode(text(plain)), hex(coded));
    assert.equal(new TextDecoder().decode(huffmanDecode(hex(coded))), plain);
  }
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(huffmanDecode(huffmanEncode(all)), all);
});

Deno.test("Huffman rejects bad padding", () => {
  // "a" is 00011 (5 bits); zero padding is invalid
  assert.throws(() => huffmanDecode(hex("18")), SyntaxError);
  // eight bits of ones padding is too long
  assert.throws(() => huffmanDecode(hex("1fff")), SyntaxError);
});

Deno.test("QPACK decodes Chromium's Huffman-coded CONNECT lines", () => {
  // Required insert count 0, base 0, :scheme https, :method CONNECT, :authority (Huffman) "127.0.0.1:4443"
  const section = hex("0000 d7 cf 508a089d5c0b8170dc69a699");
  assert.deepEqual(decodeFieldSection(section, 16384), [
    [":scheme", "https"],
    [":method", "CONNECT"],
    [":authority", "127.0.0.1:4443"],
  ]);
});

Deno.test("QPACK round-trips literal names, static references and repeats", () => {
  const fields: [string, string][] = [
    [":status", "200"],
    [":status", "403"],
    ["origin", "http://127.0.0.1:8088"],
    ["wt-protocol", '"moq-lite-05"'],
    ["sec-webtransport-http3-draft", "draft02"],
    ["x-long", "v".repeat(300)],
    ["x-long", "second"],
  ];
  assert.deepEqual(decodeFieldSection(encodeFieldSection(fields), 16384), fields);
  // :status 200 is static index 25 -> one byte d9
  assert.deepEqual(encodeFieldSection([[":status", "200"]]), hex("0000d9"));
});

Deno.test("QPACK refuses dynamic-table references and oversized sections", () => {
  assert.throws(() => decodeFieldSection(hex("0100d9"), 16384), QpackError); // insert count 1
  assert.throws(() => decodeFieldSection(hex("000081"), 16384), QpackError); // dynamic index
  assert.throws(() => decodeFieldSection(hex("000010"), 16384), QpackError); // post-base index
  assert.throws(() => decodeFieldSection(hex("0000ff7f"), 16384), QpackError); // static index 126
  assert.throws(() => decodeFieldSection(hex("00005f"), 16384), QpackError); // truncated
  const big = encodeFieldSection([["x-big", "a".repeat(2000)]]);
  assert.throws(() => decodeFieldSection(big, 1024), HeaderTooLargeError);
});

Deno.test("SETTINGS: unknown ids ignored; duplicates, HTTP/2 ids and bad booleans rejected", () => {
  const s = decodeSettings(hex("0100 3301 ab60374201 c000000014e9cd29 05"));
  assert.equal(s.get(0x33n), 1n);
  assert.equal(s.get(0x2b603742n), 1n);
  const code = (payload: string): number => {
    try {
      decodeSettings(hex(payload));
    } catch (err) {
      if (err instanceof H3ConnectionError) return err.wireCode;
    }
    return -1;
  };
  assert.equal(code("3301 3301"), H3Code.SETTINGS_ERROR);
  assert.equal(code("0201"), H3Code.SETTINGS_ERROR); // HTTP/2 ENABLE_PUSH
  assert.equal(code("3302"), H3Code.SETTINGS_ERROR);
  assert.equal(code("33"), H3Code.FRAME_ERROR);
});

Deno.test("structured fields: string lists and items", () => {
  assert.deepEqual(parseStringList('"moq-lite-05", "moq-lite-04";q=1, token, "a\\"b"'), [
    "moq-lite-05",
    "moq-lite-04",
    'a"b',
  ]);
  assert.deepEqual(parseStringList(""), []);
  assert.equal(parseStringItem('"moq-lite-05"'), "moq-lite-05");
  assert.throws(() => parseStringItem("moq-lite-05"), SyntaxError);
  assert.equal(serializeString('a"b\\'), '"a\\"b\\\\"');
});

Deno.test("close capsule bytes match the draft and Chromium", () => {
  const capsule = encodeCloseCapsule(1234, "bye");
  assert.deepEqual(encodeFrame(0, capsule), hex("000a 6843 07 000004d2 627965"));
  assert.deepEqual(decodeCloseCapsule(capsule.subarray(3)), { code: 1234, reason: "bye" });
  assert.deepEqual(encodeCloseCapsule(0, ""), hex("6843 04 00000000"));
  assert.throws(() => decodeCloseCapsule(hex("0000")), SyntaxError);
});

Deno.test("WebTransport error codes map to and from the HTTP/3 range", () => {
  const vectors: [number, number][] = [
    [0, 0x52e4a40fa8db],
    [9, 0x52e4a40fa8e4],
    [42, 0x52e4a40fa906],
    [29, 0x52e4a40fa8f8],
    [30, 0x52e4a40fa8fa],
    [0xffffffff, 0x52e5ac983162],
  ];
  for (const [app, h3] of vectors) {
    assert.equal(wtErrorToHttp3(app), h3);
    assert.equal(wtErrorFromHttp3(h3), app);
  }
  assert.equal(wtErrorFromHttp3(0x100), undefined);
  assert.equal(wtErrorFromHttp3(0x52e4a40fa8f9), undefined, "GREASE codepoint is not a WT code");
  assert.equal(streamErrorCode(new Error("stream reset by peer: error 91141958510854")), 42);
  assert.equal(streamErrorCode(new Error("connection lost")), undefined);
});
