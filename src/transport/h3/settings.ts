import { H3Code, H3ConnectionError } from "./errors.ts";
import { concatBytes, decodeVarintBig, encodeVarint } from "../../wire/mod.ts";

/** SETTINGS identifiers we send or read (RFC 9114 §7.2.4.1, RFC 9204, RFC 9220, RFC 9297, WebTransport drafts). */
export const SettingId = {
  QPACK_MAX_TABLE_CAPACITY: 0x01n,
  MAX_FIELD_SECTION_SIZE: 0x06n,
  QPACK_BLOCKED_STREAMS: 0x07n,
  ENABLE_CONNECT_PROTOCOL: 0x08n,
  H3_DATAGRAM: 0x33n,
  H3_DATAGRAM_DRAFT04: 0xffd277n,
  WEBTRANSPORT_DRAFT02: 0x2b603742n,
  WEBTRANSPORT_MAX_SESSIONS_PRE07: 0x2b603743n,
  WEBTRANSPORT_MAX_SESSIONS_DRAFT07: 0xc671706an,
} as const;

/** HTTP/2 setting ids that are errors in HTTP/3 (RFC 9114 §7.2.4.1). */
const HTTP2_RESERVED_SETTINGS = new Set([0x02n, 0x03n, 0x04n, 0x05n]);

/** Decoded SETTINGS: id → value, unknown ids included. */
export type Settings = ReadonlyMap<bigint, bigint>;

/** Parses a SETTINGS frame payload, rejecting duplicates, HTTP/2 ids and bad boolean values. */
export function decodeSettings(payload: Uint8Array): Settings {
  const out = new Map<bigint, bigint>();
  let o = 0;
  while (o < payload.length) {
    const id = decodeVarintBig(payload, o);
    if (!id) throw new H3ConnectionError(H3Code.FRAME_ERROR, "Truncated SETTINGS frame");
    o += id.length;
    const value = decodeVarintBig(payload, o);
    if (!value) throw new H3ConnectionError(H3Code.FRAME_ERROR, "Truncated SETTINGS frame");
    o += value.length;
    if (out.has(id.value)) {
      throw new H3ConnectionError(
        H3Code.SETTINGS_ERROR,
        `Duplicate setting 0x${id.value.toString(16)}`,
      );
    }
    if (HTTP2_RESERVED_SETTINGS.has(id.value)) {
      throw new H3ConnectionError(
        H3Code.SETTINGS_ERROR,
        `HTTP/2 setting 0x${id.value.toString(16)}`,
      );
    }
    const boolean = id.value === SettingId.ENABLE_CONNECT_PROTOCOL ||
      id.value === SettingId.H3_DATAGRAM || id.value === SettingId.H3_DATAGRAM_DRAFT04;
    if (boolean && value.value > 1n) {
      throw new H3ConnectionError(
        H3Code.SETTINGS_ERROR,
        `Setting 0x${id.value.toString(16)} must be 0 or 1, got ${value.value}`,
      );
    }
    out.set(id.value, value.value);
  }
  return out;
}

/** Encodes SETTINGS pairs as a frame payload. */
export function encodeSettings(pairs: readonly (readonly [bigint, bigint])[]): Uint8Array {
  return concatBytes(pairs.flatMap(([id, v]) => [encodeVarint(id), encodeVarint(v)]));
}

/** The SETTINGS we send: zero QPACK dynamic table, extended CONNECT, HTTP datagrams, every WebTransport enable id Chromium and Deno accept. */
export function localSettings(role: "server" | "client", maxFieldSectionSize: number): Uint8Array {
  return encodeSettings([
    [SettingId.QPACK_MAX_TABLE_CAPACITY, 0n],
    [SettingId.MAX_FIELD_SECTION_SIZE, BigInt(maxFieldSectionSize)],
    [SettingId.QPACK_BLOCKED_STREAMS, 0n],
    [SettingId.ENABLE_CONNECT_PROTOCOL, 1n],
    [SettingId.H3_DATAGRAM, 1n],
    [SettingId.H3_DATAGRAM_DRAFT04, 1n],
    [SettingId.WEBTRANSPORT_DRAFT02, 1n],
    [SettingId.WEBTRANSPORT_MAX_SESSIONS_DRAFT07, role === "server" ? 16n : 1n],
  ]);
}

/** True when the peer's settings enable WebTransport (draft-02 flag or draft-07 max sessions) and HTTP datagrams. */
export function supportsWebTransport(s: Settings): boolean {
  const datagram = s.get(SettingId.H3_DATAGRAM) === 1n ||
    s.get(SettingId.H3_DATAGRAM_DRAFT04) === 1n;
  const wt = s.get(SettingId.WEBTRANSPORT_DRAFT02) === 1n ||
    (s.get(SettingId.WEBTRANSPORT_MAX_SESSIONS_DRAFT07) ?? 0n) >= 1n ||
    (s.get(SettingId.WEBTRANSPORT_MAX_SESSIONS_PRE07) ?? 0n) >= 1n;
  return datagram && wt;
}
