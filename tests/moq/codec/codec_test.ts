import assert from "node:assert/strict";
import {
  type Announce,
  decodeAnnounce,
  decodeAnnounceOk,
  decodeAnnounceRequest,
  decodeDatagram,
  decodeFetch,
  decodeFrames,
  decodeGoaway,
  decodeGroupHeader,
  decodeProbe,
  decodeSetup,
  decodeSubscribe,
  decodeSubscribeResponse,
  decodeSubscribeUpdate,
  decodeTrackInfo,
  decodeTrackRequest,
  encodeAnnounce,
  encodeAnnounceOk,
  encodeAnnounceRequest,
  encodeDatagram,
  encodeFetch,
  encodeFrames,
  encodeGoaway,
  encodeGroupStreamHeader,
  encodeProbe,
  encodeSetup,
  encodeSubscribe,
  encodeSubscribeResponse,
  encodeSubscribeUpdate,
  encodeTrackInfo,
  encodeTrackRequest,
  MAX_TIMESTAMP,
  type SubscribeResponse,
  type Version,
} from "../../../src/moq/codec/messages.ts";
import { Decoder, VARINT_MAX } from "../../../src/wire/mod.ts";
import { assertDecodeError } from "../../support/decode_error.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
const bytes = (s: string) =>
  Uint8Array.from(s.split(/\s+/).filter(Boolean), (x) => parseInt(x, 16));

/** Splits a length-prefixed message into its body, checking the prefix. */
function body(wire: Uint8Array): Uint8Array {
  const d = new Decoder(wire);
  const n = d.u53();
  const b = d.bytes(n);
  d.end("message");
  return b;
}

Deno.test("SETUP: captured bytes, round trip, duplicates, unknown ids, limits", () => {
  // Captured @moq/net client SETUP (after the stream type).
  const captured = bytes("0b 01 05 08 c0 06 4b 4e 34 12 87 81");
  assert.deepEqual(decodeSetup(body(captured)), { origin: 0x064b4e34128781n });
  assert.equal(hex(encodeSetup({ origin: 0x064b4e34128781n })), hex(captured));
  const server = bytes("0e 02 01 01 01 05 08 c0 1b 00 6b ea d6 bc 4b");
  assert.deepEqual(decodeSetup(body(server)), { probe: 1, origin: 0x1b006bead6bc4bn });
  assert.equal(hex(encodeSetup({})), "01 00");
  const full = { probe: 2, path: "/relay?jwt=a.b.c", role: 2, origin: (1n << 62n) - 1n };
  assert.deepEqual(decodeSetup(body(encodeSetup(full))), full);
  // Unknown parameter ids are ignored.
  assert.deepEqual(decodeSetup(bytes("01 09 01 00")), {});
  // Regression (property test): parameters at their default (probe 0, role 3 = unknown,
  // origin 0) read as absent, so the decoded SETUP re-encodes to the same meaning.
  const defaults = decodeSetup(bytes("03 01 01 00 03 01 03 05 01 00"));
  assert.deepEqual(defaults, {});
  assert.deepEqual(decodeSetup(body(encodeSetup(defaults))), defaults);
  // Duplicate ids are refused.
  assertDecodeError(() => decodeSetup(bytes("02 05 01 01 05 01 02")), "invalid");
  // A varint parameter with trailing bytes is refused.
  assertDecodeError(() => decodeSetup(bytes("01 05 02 01 00")), "trailing");
  // Too many parameters.
  assertDecodeError(() => decodeSetup(bytes("41 00")), "too_large");
  // Parameter length past the end.
  assertDecodeError(() => decodeSetup(bytes("01 05 08 01")), "truncated");
  // Trailing bytes after the parameters.
  assertDecodeError(() => decodeSetup(bytes("00 00")), "trailing");
  // Path that is not UTF-8.
  assertDecodeError(() => decodeSetup(bytes("01 02 01 ff")), "invalid");
});

Deno.test("ANNOUNCE_REQUEST / ANNOUNCE_OK / ANNOUNCE: captured bytes and round trips", () => {
  const req = bytes("09 00 c0 06 4b 4e 34 12 87 81");
  assert.deepEqual(decodeAnnounceRequest(body(req)), { prefix: "", excludeHop: 0x064b4e34128781n });
  assert.equal(hex(encodeAnnounceRequest({ prefix: "", excludeHop: 0x064b4e34128781n })), hex(req));
  assert.equal(hex(encodeAnnounceRequest({ prefix: "/", excludeHop: 0n })), "03 01 2f 00");
  const ok = bytes("09 c0 1b 00 6b ea d6 bc 4b 01");
  assert.deepEqual(decodeAnnounceOk(body(ok)), { hop: 0x1b006bead6bc4bn, activeCount: 1 });
  assert.equal(hex(encodeAnnounceOk({ hop: 0x1b006bead6bc4bn, activeCount: 1 })), hex(ok));
  const ann = bytes("0c 01 09 64 65 6d 6f 2f 63 61 6d 31 00");
  for (const v of ["moq-lite-05", "moq-lite-04"] as Version[]) {
    assert.deepEqual(decodeAnnounce(body(ann), v), { active: true, suffix: "demo/cam1", hops: [] });
  }
  assert.equal(hex(encodeAnnounce({ active: true, suffix: "demo/cam1", hops: [] })), hex(ann));
  const m: Announce = { active: false, suffix: "x", hops: [1n, VARINT_MAX] };
  assert.deepEqual(decodeAnnounce(body(encodeAnnounce(m)), "moq-lite-04"), m);
  // Status 2 (restart) is lite-05 only; 3 is never valid.
  assert.equal(decodeAnnounce(bytes("02 00 00"), "moq-lite-05").active, true);
  assertDecodeError(() => decodeAnnounce(bytes("02 00 00"), "moq-lite-04"), "invalid");
  assertDecodeError(() => decodeAnnounce(bytes("03 00 00"), "moq-lite-05"), "invalid");
  // More than 32 hops.
  assertDecodeError(() => decodeAnnounce(bytes("01 00 21"), "moq-lite-05"), "too_large");
  // String length past the end.
  assertDecodeError(() => decodeAnnounceRequest(bytes("05 61")), "truncated");
  assertDecodeError(() => decodeAnnounceOk(bytes("01 01 00")), "trailing");
});

Deno.test("TRACK / TRACK_INFO: captured bytes, timescale 0, bad bool", () => {
  const req = bytes("10 09 64 65 6d 6f 2f 63 61 6d 31 05 76 69 64 65 6f");
  assert.deepEqual(decodeTrackRequest(body(req)), { path: "demo/cam1", track: "video" });
  assert.equal(hex(encodeTrackRequest({ path: "demo/cam1", track: "video" })), hex(req));
  const info = bytes("06 02 00 53 88 43 e8");
  const decoded = { priority: 2, ordered: false, maxLatency: 5000, timescale: 1000 };
  assert.deepEqual(decodeTrackInfo(body(info)), decoded);
  assert.equal(hex(encodeTrackInfo(decoded)), hex(info));
  assertDecodeError(() => decodeTrackInfo(bytes("00 00 00 00")), "invalid");
  assertDecodeError(() => decodeTrackInfo(bytes("00 02 00 01")), "invalid");
  assert.throws(() => encodeTrackInfo({ ...decoded, timescale: 0 }), RangeError);
});

Deno.test("SUBSCRIBE / SUBSCRIBE_UPDATE: captured bytes, +1 ranges, round trips", () => {
  const cap = bytes("16 00 09 64 65 6d 6f 2f 63 61 6d 31 05 76 69 64 65 6f 07 00 00 00 00");
  const m = {
    id: 0n,
    path: "demo/cam1",
    track: "video",
    priority: 7,
    ordered: false,
    maxLatency: 0,
    start: undefined,
    end: undefined,
  };
  assert.deepEqual(decodeSubscribe(body(cap)), m);
  assert.equal(hex(encodeSubscribe(m)), hex(cap));
  const gomoqt = bytes(
    "17 01 0a 2f 6c 69 76 65 2f 63 61 6d 31 05 76 69 64 65 6f 80 00 00 00 00",
  );
  assert.equal(decodeSubscribe(body(gomoqt)).path, "/live/cam1");
  const ranged = { ...m, id: VARINT_MAX, start: 0, end: 41, ordered: true, maxLatency: 1000 };
  assert.deepEqual(decodeSubscribe(body(encodeSubscribe(ranged))), ranged);
  const upd = bytes("06 c8 01 43 e8 00 00");
  const u = { priority: 200, ordered: true, maxLatency: 1000, start: undefined, end: undefined };
  assert.deepEqual(decodeSubscribeUpdate(body(upd)), u);
  assert.equal(hex(encodeSubscribeUpdate(u)), hex(upd));
  assertDecodeError(() => decodeSubscribeUpdate(bytes("c8 01 43 e8 00 00 00")), "trailing");
  assertDecodeError(() => decodeSubscribeUpdate(bytes("c8 01 43")), "truncated");
  assertDecodeError(() => decodeSubscribe(bytes("00 00 00 07 05 00 00 00")), "invalid");
});

Deno.test("subscribe responses per version: captured bytes, unknown types", () => {
  const ok04: SubscribeResponse = {
    kind: "ok",
    priority: 128,
    ordered: false,
    maxLatency: 0,
    start: 5,
    end: undefined,
  };
  assert.equal(hex(encodeSubscribeResponse(ok04, "moq-lite-04")), "00 05 80 00 00 06 00");
  assert.deepEqual(decodeSubscribeResponse(0, bytes("80 00 00 06 00"), "moq-lite-04"), ok04);
  assert.equal(
    hex(encodeSubscribeResponse({ kind: "start", group: 0 }, "moq-lite-05")),
    "00 01 00",
  );
  assert.equal(hex(encodeSubscribeResponse({ kind: "end", group: 3 }, "moq-lite-05")), "01 01 03");
  const drop: SubscribeResponse = { kind: "drop", start: 1, end: 2, code: 3 };
  assert.equal(hex(encodeSubscribeResponse(drop, "moq-lite-05")), "02 03 01 02 03");
  assert.equal(hex(encodeSubscribeResponse(drop, "moq-lite-04")), "01 03 01 02 03");
  assert.deepEqual(decodeSubscribeResponse(2, bytes("01 02 03"), "moq-lite-05"), drop);
  assert.deepEqual(decodeSubscribeResponse(1, bytes("01 02 03"), "moq-lite-04"), drop);
  assert.deepEqual(decodeSubscribeResponse(0, bytes("07"), "moq-lite-05"), {
    kind: "start",
    group: 7,
  });
  assertDecodeError(() => decodeSubscribeResponse(2, bytes("01 02 03"), "moq-lite-04"), "invalid");
  assertDecodeError(() => decodeSubscribeResponse(3, bytes("00"), "moq-lite-05"), "invalid");
  assertDecodeError(() => decodeSubscribeResponse(0, bytes("07 00"), "moq-lite-05"), "trailing");
  assert.throws(() => encodeSubscribeResponse(ok04, "moq-lite-05"), TypeError);
  assert.throws(
    () => encodeSubscribeResponse({ kind: "start", group: 1 }, "moq-lite-04"),
    TypeError,
  );
});

Deno.test("GROUP and FRAME: captured lite-05 timestamps, lite-04 sizes, limits", () => {
  assert.equal(hex(encodeGroupStreamHeader({ subscribeId: 0n, sequence: 0 })), "00 02 00 00");
  assert.equal(hex(encodeGroupStreamHeader({ subscribeId: 1n, sequence: 5 })), "00 02 01 05");
  assert.deepEqual(decodeGroupHeader(bytes("00 01")), { subscribeId: 0n, sequence: 1 });
  assertDecodeError(() => decodeGroupHeader(bytes("00 01 02")), "trailing");
  const t = new TextEncoder();
  const frames05 = encodeFrames([t.encode("f0a"), t.encode("f0b")], "moq-lite-05", 0, [1000, 995]);
  assert.equal(hex(frames05), "47 d0 03 66 30 61 09 03 66 30 62");
  const decoded = decodeFrames(frames05, "moq-lite-05");
  assert.deepEqual(decoded.map((f) => f.timestamp), [1000, 995]);
  assert.deepEqual(decoded.map((f) => new TextDecoder().decode(f.payload)), ["f0a", "f0b"]);
  assert.equal(hex(encodeFrames([t.encode("hi")], "moq-lite-04")), "02 68 69");
  assert.equal(hex(encodeFrames([new Uint8Array(0)], "moq-lite-05", 3)), "06 00");
  // Frame length past the end, truncated delta, negative running timestamp, over the size limit.
  assertDecodeError(() => decodeFrames(bytes("05 68 69"), "moq-lite-04"), "truncated");
  assertDecodeError(() => decodeFrames(bytes("47"), "moq-lite-05"), "truncated");
  assertDecodeError(() => decodeFrames(bytes("01 00"), "moq-lite-05"), "invalid");
  assertDecodeError(() => decodeFrames(bytes("04 00 00 00 00"), "moq-lite-04", 3), "too_large");
});

Deno.test("FRAME timestamps in nanoseconds stay exact, up to 2^61 - 1", () => {
  const wallclock = 1_800_000_000_123_456_789n; // above 2^53: a float would round it
  const t = new TextEncoder();
  const frames = encodeFrames([t.encode("a"), t.encode("b")], "moq-lite-05", wallclock);
  const decoded = decodeFrames(frames, "moq-lite-05");
  assert.deepEqual(decoded.map((f) => f.exactTimestamp), [wallclock, wallclock]);
  assert.equal(decoded[0]!.timestamp, Number(wallclock), "the number form is the nearest float");
  // The first delta is zigzag(timestamp) = 2 * timestamp: the largest fits the varint exactly.
  const last = decodeFrames(
    encodeFrames([t.encode("z")], "moq-lite-05", MAX_TIMESTAMP),
    "moq-lite-05",
  );
  assert.equal(last[0]!.exactTimestamp, MAX_TIMESTAMP);
  assert.equal(MAX_TIMESTAMP * 2n, VARINT_MAX - 1n);
  assert.throws(() => encodeFrames([t.encode("z")], "moq-lite-05", MAX_TIMESTAMP + 1n), RangeError);
  // A running sum past the limit (two large positive deltas) is refused on receipt.
  const half = encodeFrames([t.encode("x")], "moq-lite-05", MAX_TIMESTAMP);
  const twice = new Uint8Array([...half, ...half]);
  assertDecodeError(() => decodeFrames(twice, "moq-lite-05"), "invalid");
  const dg = {
    subscribeId: 1n,
    sequence: 2,
    timestamp: MAX_TIMESTAMP + 1n,
    payload: t.encode("d"),
  };
  assertDecodeError(() => decodeDatagram(encodeDatagram(dg)), "invalid");
  const exact = { ...dg, timestamp: wallclock };
  assert.deepEqual(decodeDatagram(encodeDatagram(exact)), exact);
});

Deno.test("FETCH / PROBE / GOAWAY / DATAGRAM: captured bytes and round trips", () => {
  const fetch = bytes("12 09 64 65 6d 6f 2f 63 61 6d 31 05 76 69 64 65 6f 03 01");
  const f = { path: "demo/cam1", track: "video", priority: 3, group: 1 };
  assert.deepEqual(decodeFetch(body(fetch)), f);
  assert.equal(hex(encodeFetch(f)), hex(fetch));
  const probe = bytes("05 80 1e 84 80 17");
  assert.deepEqual(decodeProbe(body(probe)), { bitrate: 2_000_000, rtt: 23 });
  assert.equal(hex(encodeProbe({ bitrate: 2_000_000, rtt: 23 })), hex(probe));
  const uri = "https://b.example/";
  assert.deepEqual(decodeGoaway(body(encodeGoaway({ uri }))), { uri });
  assertDecodeError(() => decodeGoaway(bytes("12 68")), "truncated");
  const dg = { subscribeId: 3n, sequence: 9, timestamp: 1000n, payload: new Uint8Array([1, 2]) };
  assert.deepEqual(decodeDatagram(encodeDatagram(dg)), dg);
  assertDecodeError(() => decodeDatagram(bytes("03 09")), "truncated");
});
