/** QMux frames and transport parameters: round trips and the bytes captured in protocol §10. */
import assert from "node:assert/strict";
import { QMuxProtocolError, TransportCode } from "../../../src/transport/qmux/errors.ts";
import {
  type ControlFrame,
  encodeFrame,
  type Frame,
  streamFrameHeader,
} from "../../../src/transport/qmux/frame.ts";
import { decodeMessage } from "../../../src/transport/qmux/frame_decode.ts";
import {
  decodeTransportParams,
  encodeTransportParams,
  type TransportParams,
} from "../../../src/transport/qmux/params.ts";
import type { WireFormat } from "../../../src/transport/qmux/subprotocol.ts";
import { concatBytes } from "../../../src/wire/mod.ts";

const hex = (s: string) =>
  Uint8Array.from(s.split(/\s+/).filter((b) => b !== "").map((b) => parseInt(b, 16)));

/** @moq/qmux 0.3.3's defaults, whose encoding protocol §10.4 captured. */
const THEIR_DEFAULTS: TransportParams = {
  maxIdleTimeout: 30000,
  initialMaxData: 1048576,
  initialMaxStreamDataBidiLocal: 262144,
  initialMaxStreamDataBidiRemote: 262144,
  initialMaxStreamDataUni: 262144,
  initialMaxStreamsBidi: 100,
  initialMaxStreamsUni: 100,
  maxDatagramFrameSize: 16382,
  maxRecordSize: 16382,
  resetStreamAt: true,
};

const CAPTURED_02 = hex(`
  ff 51 53 30 0d 0a 0d 0a 37
  01 04 80 00 75 30  04 04 80 10 00 00
  05 04 80 04 00 00  06 04 80 04 00 00  07 04 80 04 00 00
  08 02 40 64  09 02 40 64  20 02 7f fe
  c5 71 c5 94 29 cd 08 45 02 7f fe  1d 00`);

function paramsFrame(format: WireFormat, p: TransportParams): Uint8Array {
  return encodeFrame(format, {
    type: "transport_parameters",
    payload: encodeTransportParams(p, format),
  });
}

Deno.test("transport parameters encode to the captured qmux-02, -01 and -00 bytes", () => {
  assert.deepEqual(paramsFrame("qmux-02", THEIR_DEFAULTS), CAPTURED_02);
  // qmux-01: no reset_stream_at (length 53); qmux-00: no datagram parameter either (49).
  const q01 = paramsFrame("qmux-01", THEIR_DEFAULTS);
  assert.equal(q01[8], 53);
  assert.deepEqual(q01.subarray(9), CAPTURED_02.subarray(9, 9 + 53));
  const q00 = paramsFrame("qmux-00", THEIR_DEFAULTS);
  assert.equal(q00[8], 49);
  assert.ok(!q00.subarray(9).join(",").includes([0x20, 0x02, 0x7f, 0xfe].join(",")));
});

Deno.test("the captured qmux-02 parameters decode to @moq/qmux's defaults", () => {
  const [frame] = decodeMessage(CAPTURED_02, "qmux-02");
  assert.equal(frame?.type, "transport_parameters");
  const payload = (frame as Extract<Frame, { type: "transport_parameters" }>).payload;
  assert.deepEqual(decodeTransportParams(payload, "qmux-02"), THEIR_DEFAULTS);
});

Deno.test("captured qmux-02 session frames decode", () => {
  const cases: [string, Frame][] = [
    ["0e 02 00 01 01", { type: "stream", id: 2, offset: 0, data: hex("01"), fin: false }],
    ["0f 02 0d 00", { type: "stream", id: 2, offset: 13, data: hex(""), fin: true }],
    ["05 03 00", { type: "stop_sending", id: 3, code: 0 }],
    ["04 00 00 12", { type: "reset_stream", id: 0, code: 0, finalSize: 18 }],
    ["0e 07 06 02 68 69", { type: "stream", id: 7, offset: 6, data: hex("68 69"), fin: false }],
    ["1d 07 03 62 79 65", { type: "application_close", code: 7, reason: "bye" }],
  ];
  for (const [bytes, frame] of cases) {
    assert.deepEqual(decodeMessage(hex(bytes), "qmux-02"), [frame], bytes);
  }
});

Deno.test("STREAM headers match the captured bytes", () => {
  assert.deepEqual(streamFrameHeader("qmux-02", 2, 0, 1, false), hex("0e 02 00 01"));
  assert.deepEqual(streamFrameHeader("qmux-02", 2, 13, 0, true), hex("0f 02 0d 00"));
  assert.deepEqual(streamFrameHeader("webtransport", 6, 99, 5, true), hex("09 06"));
});

Deno.test("control frames round trip in every format that has them", () => {
  const frames: ControlFrame[] = [
    { type: "reset_stream", id: 4, code: 0xffff_ffff, finalSize: 70000 },
    { type: "reset_stream", id: 4, code: 3, finalSize: 90, reliableSize: 10 },
    { type: "stop_sending", id: 9, code: 12 },
    { type: "max_data", max: 2 ** 40 },
    { type: "max_stream_data", id: 8, max: 524288 },
    { type: "max_streams", bidi: true, max: 150 },
    { type: "max_streams", bidi: false, max: 1500 },
    { type: "data_blocked", limit: 10 },
    { type: "stream_data_blocked", id: 3, limit: 11 },
    { type: "streams_blocked", bidi: false, limit: 12 },
    { type: "connection_close", code: TransportCode.FLOW_CONTROL_ERROR, frameType: 0, reason: "x" },
    { type: "application_close", code: 0, reason: "" },
    { type: "datagram", data: hex("01 02 03"), withLength: true },
    { type: "ping", response: false, sequence: 5n },
    { type: "ping", response: true, sequence: 2n ** 61n },
  ];
  for (const f of frames) {
    assert.deepEqual(decodeMessage(encodeFrame("qmux-02", f), "qmux-02"), [f]);
  }
  // Legacy: stream, reset (no final size), stop and the closes only.
  assert.deepEqual(
    decodeMessage(
      encodeFrame("webtransport", { type: "reset_stream", id: 6, code: 5, finalSize: 9 }),
      "webtransport",
    ),
    [{ type: "reset_stream", id: 6, code: 5, finalSize: undefined }],
  );
  assert.deepEqual(
    decodeMessage(
      encodeFrame("webtransport", { type: "application_close", code: 3, reason: "é" }),
      "webtransport",
    ),
    [{ type: "application_close", code: 3, reason: "é" }],
  );
  assert.throws(() => encodeFrame("webtransport", { type: "max_data", max: 1 }), RangeError);
});

Deno.test("a record holds several frames; PADDING and empty messages are skipped", () => {
  const record = concatBytes([
    hex("00 00"),
    streamFrameHeader("qmux-01", 0, 0, 2, false),
    hex("aa bb"),
    encodeFrame("qmux-01", { type: "max_data", max: 7 }),
    hex("00"),
  ]);
  assert.deepEqual(decodeMessage(record, "qmux-01"), [
    { type: "stream", id: 0, offset: 0, data: hex("aa bb"), fin: false },
    { type: "max_data", max: 7 },
  ]);
  assert.deepEqual(decodeMessage(new Uint8Array(0), "qmux-02"), []);
  // STREAM without Length runs to the end of the message; without Offset (0.0.6's 0x0a) too.
  assert.deepEqual(decodeMessage(hex("0a 04 02 61 62"), "qmux-00"), [
    { type: "stream", id: 4, offset: undefined, data: hex("61 62"), fin: false },
  ]);
  assert.deepEqual(decodeMessage(hex("08 04 61 62"), "qmux-00"), [
    { type: "stream", id: 4, offset: undefined, data: hex("61 62"), fin: false },
  ]);
});

function assertProtocolError(fn: () => unknown, code: number): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof QMuxProtocolError, `expected QMuxProtocolError, got ${e}`);
    assert.equal(e.wireCode, code);
    return true;
  });
}

Deno.test("malformed frames are FRAME_ENCODING_ERROR", () => {
  assertProtocolError(
    () => decodeMessage(hex("21"), "qmux-02"),
    TransportCode.FRAME_ENCODING_ERROR,
  );
  assertProtocolError(
    () => decodeMessage(hex("0e 02 00 05 61"), "qmux-02"),
    TransportCode.FRAME_ENCODING_ERROR,
  );
  assertProtocolError(
    () => decodeMessage(hex("10"), "qmux-01"),
    TransportCode.FRAME_ENCODING_ERROR,
  );
  assertProtocolError(
    () => decodeMessage(hex("1d 00 02 ff fe"), "qmux-02"),
    TransportCode.FRAME_ENCODING_ERROR,
  );
  assertProtocolError(
    () => decodeMessage(hex("10 05"), "webtransport"),
    TransportCode.FRAME_ENCODING_ERROR,
  );
});

Deno.test("bad transport parameters are TRANSPORT_PARAMETER_ERROR", () => {
  const bad = [
    "00 01 00", // original_destination_connection_id: forbidden
    "04 01 05 04 01 06", // repeated
    "04 02 05", // value cut short
    "04 02 05 00", // value longer than its varint
    "c5 71 c5 94 29 cd 08 45 02 40 64", // max_record_size 100 < 16382
    "3d 4f 9c 2a 8b 1e 60 75 00", // application_protocols over WebSocket
    "1d 01 00", // reset_stream_at with a value
  ];
  for (const b of bad) {
    assertProtocolError(
      () => decodeTransportParams(hex(b), "qmux-02"),
      TransportCode.TRANSPORT_PARAMETER_ERROR,
    );
  }
  // Unknown ids are ignored; absent limits are 0; max_record_size defaults to 16382.
  const p = decodeTransportParams(hex("40 ff 01 07  04 01 09"), "qmux-01");
  assert.equal(p.initialMaxData, 9);
  assert.equal(p.initialMaxStreamsUni, 0);
  assert.equal(p.maxRecordSize, 16382);
});
