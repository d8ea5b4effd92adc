// The QMux decoders (frames in every wire format, transport parameters, our
// WebSocket client's frame parser) against generated and hostile bytes:
// encode then decode is the identity, and any input gives a value or the
// protocol error that ends the session — never another exception.
import assert from "node:assert/strict";
import { QMuxProtocolError } from "../../../src/transport/qmux/errors.ts";
import {
  type ControlFrame,
  encodeFrame,
  MAX_STREAM_PAYLOAD,
  streamFrameHeader,
} from "../../../src/transport/qmux/frame.ts";
import { decodeMessage } from "../../../src/transport/qmux/frame_decode.ts";
import {
  decodeTransportParams,
  encodeTransportParams,
  MIN_RECORD_SIZE,
  type TransportParams,
} from "../../../src/transport/qmux/params.ts";
import type { WireFormat } from "../../../src/transport/qmux/subprotocol.ts";
import { parseServerFrame, WsProtocolError } from "../../../src/transport/qmux/ws_frame.ts";
import { concatBytes } from "../../../src/wire/mod.ts";
import { check, decodesOrRefuses, fc, hostileBytes, retainedSize } from "../../support/property.ts";

const FORMATS: readonly WireFormat[] = ["qmux-02", "qmux-01", "qmux-00", "webtransport"];
const id = fc.nat({ max: 2 ** 40 });
const limit = fc.maxSafeNat();
const code = fc.nat({ max: 0xffff_ffff });
const reason = fc.string({ maxLength: 40 });

/** Control frames the format can carry, as the decoder returns them. */
function controlFrames(format: WireFormat): fc.Arbitrary<ControlFrame> {
  const both = [
    fc.record({ type: fc.constant("stop_sending" as const), id, code }),
    fc.record({ type: fc.constant("application_close" as const), code: limit, reason }),
  ];
  if (format === "webtransport") {
    return fc.oneof(
      ...both,
      fc.record({
        type: fc.constant("reset_stream" as const),
        id,
        code,
        finalSize: fc.constant(undefined),
      }),
    );
  }
  return fc.oneof(
    ...both,
    fc.record({ type: fc.constant("reset_stream" as const), id, code, finalSize: limit }),
    fc.record({ type: fc.constant("max_data" as const), max: limit }),
    fc.record({ type: fc.constant("max_stream_data" as const), id, max: limit }),
    fc.record({ type: fc.constant("max_streams" as const), bidi: fc.boolean(), max: limit }),
    fc.record({ type: fc.constant("data_blocked" as const), limit }),
    fc.record({ type: fc.constant("streams_blocked" as const), bidi: fc.boolean(), limit }),
    fc.record({
      type: fc.constant("connection_close" as const),
      code: limit,
      frameType: limit,
      reason,
    }),
    fc.record({
      type: fc.constant("ping" as const),
      response: fc.boolean(),
      sequence: fc.bigInt({ min: 0n, max: (1n << 62n) - 1n }),
    }),
    fc.record({
      type: fc.constant("datagram" as const),
      data: fc.uint8Array({ maxLength: 64 }),
      withLength: fc.constant(true),
    }),
  );
}

const streamFrame = fc.record({
  id,
  offset: fc.nat({ max: 2 ** 40 }),
  data: fc.uint8Array({ maxLength: 80 }),
  fin: fc.boolean(),
});

for (const format of FORMATS) {
  Deno.test(`property: ${format} frames decode to what was encoded`, () => {
    check(
      fc.property(controlFrames(format), (f) => {
        assert.deepEqual(decodeMessage(encodeFrame(format, f), format), [structuredClone(f)]);
      }),
      500,
    );
    check(
      fc.property(streamFrame, (s) => {
        const bytes = concatBytes([
          streamFrameHeader(format, s.id, s.offset, s.data.length, s.fin),
          s.data,
        ]);
        const [f] = decodeMessage(bytes, format);
        assert.deepEqual(f, {
          type: "stream",
          id: s.id,
          offset: format === "webtransport" ? undefined : s.offset,
          data: s.data,
          fin: s.fin,
        });
      }),
      300,
    );
  });

  Deno.test(`property: ${format} messages decode or are a QMux protocol error`, () => {
    const valid = fc.array(controlFrames(format), { minLength: 1, maxLength: 4 }).map((fs) =>
      format === "webtransport" || format === "qmux-00"
        ? encodeFrame(format, fs[0]!)
        : concatBytes(fs.map((f) => encodeFrame(format, f)))
    );
    check(
      fc.property(hostileBytes(valid), (bytes) => {
        const frames = decodesOrRefuses(
          () => decodeMessage(bytes, format),
          [QMuxProtocolError],
          bytes,
        );
        if (frames) assert.ok(retainedSize(frames) <= 64 * bytes.length + 256, "frames grew");
      }),
      800,
    );
  });
}

const params: fc.Arbitrary<TransportParams> = fc.record({
  maxIdleTimeout: limit,
  initialMaxData: limit,
  initialMaxStreamDataBidiLocal: limit,
  initialMaxStreamDataBidiRemote: limit,
  initialMaxStreamDataUni: limit,
  initialMaxStreamsBidi: limit,
  initialMaxStreamsUni: limit,
  maxDatagramFrameSize: limit,
  maxRecordSize: fc.integer({ min: MIN_RECORD_SIZE, max: Number.MAX_SAFE_INTEGER }),
  resetStreamAt: fc.boolean(),
});

Deno.test("property: transport parameters round trip (what each draft carries)", () => {
  check(
    fc.property(params, (p) => {
      const back = decodeTransportParams(encodeTransportParams(p, "qmux-02"), "qmux-02");
      assert.deepEqual(back, structuredClone(p));
      const q00 = decodeTransportParams(encodeTransportParams(p, "qmux-00"), "qmux-00");
      assert.deepEqual(q00, {
        ...structuredClone(p),
        maxDatagramFrameSize: 0,
        resetStreamAt: false,
      });
    }),
    500,
  );
  check(
    fc.property(hostileBytes(params.map((p) => encodeTransportParams(p, "qmux-02"))), (bytes) => {
      decodesOrRefuses(() => decodeTransportParams(bytes, "qmux-02"), [QMuxProtocolError], bytes);
    }),
    800,
  );
});

Deno.test("property: server WebSocket frames parse whole, wait for more, or fail the connection", () => {
  const frame = fc.record({
    fin: fc.boolean(),
    opcode: fc.constantFrom(0, 1, 2, 8, 9, 10),
    payload: fc.uint8Array({ maxLength: 300 }),
  }).map(({ fin, opcode, payload }) => {
    const control = opcode >= 8;
    const body = control ? payload.subarray(0, 125) : payload;
    const n = body.length;
    const head = n < 126 ? [(fin || control ? 0x80 : 0) | opcode, n] : [
      (fin ? 0x80 : 0) | opcode,
      126,
      n >> 8,
      n & 0xff,
    ];
    return concatBytes([new Uint8Array(head), body]);
  });
  check(
    fc.property(hostileBytes(frame), (bytes) => {
      const parsed = decodesOrRefuses(
        () => parseServerFrame(bytes, MAX_STREAM_PAYLOAD),
        [WsProtocolError],
        bytes,
      );
      if (parsed) {
        assert.ok(parsed.size <= bytes.length);
        assert.ok(parsed.frame.payload.length <= parsed.size);
      }
    }),
    800,
  );
});
