// Every moq-lite-04 and -05 message decoder against generated and hostile
// bytes: encode then decode is the identity, any input gives a value or a
// DecodeError, and a decoded value stays proportional to its input.
import assert from "node:assert/strict";
import * as codec from "../../../src/moq/codec/messages.ts";
import { DecodeError, Decoder, VARINT_MAX } from "../../../src/wire/mod.ts";
import { check, decodesOrRefuses, fc, hostileBytes, retainedSize } from "../../support/property.ts";

const versions: readonly codec.Version[] = ["moq-lite-04", "moq-lite-05"];
const u62 = fc.bigInt({ min: 0n, max: VARINT_MAX });
const u53 = fc.maxSafeNat();
const byte = fc.integer({ min: 0, max: 255 });
const name = fc.string({ unit: "grapheme", maxLength: 40 });
const group = fc.nat({ max: Number.MAX_SAFE_INTEGER - 1 });

/** The body of a length-prefixed message, checking the prefix. */
function body(wire: Uint8Array): Uint8Array {
  const d = new Decoder(wire);
  const b = d.bytes(d.u53("length"));
  d.end("message");
  return b;
}

/** One message kind: how to make, encode and decode it. */
interface Kind<T> {
  readonly name: string;
  readonly value: fc.Arbitrary<T>;
  readonly encode: (m: T) => Uint8Array;
  readonly decode: (body: Uint8Array) => unknown;
}

function kind<T>(k: Kind<T>): Kind<unknown> {
  return k as Kind<unknown>;
}

const range = {
  priority: byte,
  ordered: fc.boolean(),
  maxLatency: u53,
  start: fc.option(group, { nil: undefined }),
  end: fc.option(group, { nil: undefined }),
};

function kinds(version: codec.Version): Kind<unknown>[] {
  const v05 = version === "moq-lite-05";
  const responses: fc.Arbitrary<codec.SubscribeResponse> = v05
    ? fc.oneof(
      fc.record({ kind: fc.constant("start" as const), group: u53 }),
      fc.record({ kind: fc.constant("end" as const), group: u53 }),
      fc.record({ kind: fc.constant("drop" as const), start: u53, end: u53, code: u53 }),
    )
    : fc.oneof(
      fc.record({ kind: fc.constant("ok" as const), ...range }),
      fc.record({ kind: fc.constant("drop" as const), start: u53, end: u53, code: u53 }),
    );
  const list: Kind<unknown>[] = [
    kind({
      name: "ANNOUNCE_REQUEST",
      value: fc.record({ prefix: name, excludeHop: u62 }),
      encode: codec.encodeAnnounceRequest,
      decode: codec.decodeAnnounceRequest,
    }),
    kind({
      name: "ANNOUNCE",
      value: fc.record({
        active: fc.boolean(),
        suffix: name,
        hops: fc.array(u62, { maxLength: codec.MAX_HOPS }),
      }),
      encode: codec.encodeAnnounce,
      decode: (b) => codec.decodeAnnounce(b, version),
    }),
    kind({
      name: "SUBSCRIBE",
      value: fc.record({ id: u62, path: name, track: name, ...range }),
      encode: codec.encodeSubscribe,
      decode: codec.decodeSubscribe,
    }),
    kind({
      name: "SUBSCRIBE_UPDATE",
      value: fc.record(range),
      encode: codec.encodeSubscribeUpdate,
      decode: codec.decodeSubscribeUpdate,
    }),
    kind({
      name: "subscribe response",
      value: responses,
      encode: (r) => codec.encodeSubscribeResponse(r, version),
      decode: (b) => {
        // The response's type varint precedes its length-prefixed body.
        const d = new Decoder(b);
        const type = d.u53("type");
        return codec.decodeSubscribeResponse(type, d.rest(), version);
      },
    }),
    kind({
      name: "GROUP",
      value: fc.record({ subscribeId: u62, sequence: u53 }),
      encode: (m) => codec.encodeGroupStreamHeader(m).subarray(1),
      decode: codec.decodeGroupHeader,
    }),
    kind({
      name: "FETCH",
      value: fc.record({ path: name, track: name, priority: byte, group: u53 }),
      encode: codec.encodeFetch,
      decode: codec.decodeFetch,
    }),
    kind({
      name: "PROBE",
      value: fc.record({ bitrate: u53, rtt: u53 }),
      encode: codec.encodeProbe,
      decode: codec.decodeProbe,
    }),
    kind({
      name: "GOAWAY",
      value: fc.record({ uri: name }),
      encode: codec.encodeGoaway,
      decode: codec.decodeGoaway,
    }),
  ];
  if (v05) {
    list.push(
      kind({
        name: "ANNOUNCE_OK",
        value: fc.record({ hop: u62, activeCount: u53 }),
        encode: codec.encodeAnnounceOk,
        decode: codec.decodeAnnounceOk,
      }),
      kind({
        name: "SETUP",
        value: fc.record({
          probe: fc.constantFrom(1, 2),
          path: name.filter((s) => s !== ""),
          role: fc.constantFrom(1, 2),
          origin: fc.bigInt({ min: 1n, max: VARINT_MAX }),
        }, { requiredKeys: [] }),
        encode: codec.encodeSetup,
        decode: codec.decodeSetup,
      }),
      kind({
        name: "TRACK",
        value: fc.record({ path: name, track: name }),
        encode: codec.encodeTrackRequest,
        decode: codec.decodeTrackRequest,
      }),
      kind({
        name: "TRACK_INFO",
        value: fc.record({
          priority: byte,
          ordered: fc.boolean(),
          maxLatency: u53,
          timescale: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        }),
        encode: codec.encodeTrackInfo,
        decode: codec.decodeTrackInfo,
      }),
    );
  }
  return list;
}

/** The body a decoder sees: the subscribe response keeps its type prefix. */
function bodyOf(k: Kind<unknown>, wire: Uint8Array): Uint8Array {
  if (k.name !== "subscribe response") return body(wire);
  const d = new Decoder(wire);
  const type = d.u53("type");
  const b = d.bytes(d.u53("length"));
  return Uint8Array.from([type, ...b]);
}

for (const version of versions) {
  Deno.test(`property: ${version} messages decode to what was encoded`, () => {
    for (const k of kinds(version)) {
      check(
        fc.property(k.value, (m) => {
          const decoded = k.decode(bodyOf(k, k.encode(m)));
          // structuredClone: fast-check's records have a null prototype, decoded ones do not.
          assert.deepEqual(decoded, structuredClone(m), k.name);
        }),
        300,
      );
    }
  });

  Deno.test(`property: ${version} decoders give a value or a DecodeError for hostile bytes`, () => {
    for (const k of kinds(version)) {
      const valid = k.value.map((m) => bodyOf(k, k.encode(m)));
      check(
        fc.property(hostileBytes(valid), (bytes) => {
          const value = decodesOrRefuses(() => k.decode(bytes), [DecodeError], bytes);
          if (value === undefined) return;
          // Decoded messages hold at most a few words per input byte.
          assert.ok(retainedSize(value) <= 32 * bytes.length + 256, `${k.name} grew`);
          // What decoded re-encodes to bytes that decode the same.
          const again = decodesOrRefuses(() => k.decode(bodyOf(k, k.encode(value))), [], bytes);
          assert.deepEqual(again, value, k.name);
        }),
        500,
      );
    }
  });
}

Deno.test("property: group frames decode to what was encoded and survive hostile bytes", () => {
  const frames = fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 });
  for (const version of versions) {
    check(
      fc.property(frames, fc.nat({ max: 1 << 30 }), (fs, ts) => {
        const decoded = codec.decodeFrames(codec.encodeFrames(fs, version, ts), version);
        assert.deepEqual(decoded.map((f) => f.payload), fs);
        if (version === "moq-lite-05") { for (const f of decoded) assert.equal(f.timestamp, ts); }
      }),
      300,
    );
    const valid = frames.map((fs) => codec.encodeFrames(fs, version, 7));
    check(
      fc.property(hostileBytes(valid), (bytes) => {
        const value = decodesOrRefuses(
          () => codec.decodeFrames(bytes, version),
          [DecodeError],
          bytes,
        );
        if (value) assert.ok(value.reduce((n, f) => n + f.payload.length, 0) <= bytes.length);
      }),
      500,
    );
  }
});

Deno.test("property: datagrams decode to what was encoded and survive hostile bytes", () => {
  const datagram = fc.record({
    subscribeId: u62,
    sequence: u53,
    timestamp: fc.bigInt({ min: 0n, max: codec.MAX_TIMESTAMP }),
    payload: fc.uint8Array({ maxLength: 64 }),
  });
  check(
    fc.property(datagram, (m) => {
      assert.deepEqual(codec.decodeDatagram(codec.encodeDatagram(m)), structuredClone(m));
    }),
    300,
  );
  check(
    fc.property(hostileBytes(datagram.map(codec.encodeDatagram)), (bytes) => {
      decodesOrRefuses(() => codec.decodeDatagram(bytes), [DecodeError], bytes);
    }),
    500,
  );
});
