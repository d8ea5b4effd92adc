/**
 * Every moq-lite-04 and moq-lite-05 message: encode to wire bytes (with the
 * length prefix), decode from a message body (after the length prefix).
 * Decoders consume the body exactly; anything else is a `DecodeError`.
 */
import { DecodeError, Decoder, Encoder, zigzagDecode, zigzagEncode } from "../../wire/mod.ts";

/** The moq-lite versions sluice speaks, by their ALPN / WT-Protocol token. */
export type Version = "moq-lite-05" | "moq-lite-04";
/** All supported versions, preferred first: the ALPN tokens and WT-Protocols handed to the transports. */
export const VERSIONS: readonly Version[] = ["moq-lite-05", "moq-lite-04"];

/** Bidirectional stream types. */
export const BidiType = {
  Announce: 1,
  Subscribe: 2,
  Fetch: 3,
  Probe: 4,
  Goaway: 5,
  Track: 6,
} as const;
/** Unidirectional stream types. */
export const UniType = { Group: 0, Setup: 1 } as const;

/** Largest control message accepted. */
export const MAX_CONTROL_MESSAGE = 65_536;
/** Paths and track names longer than this are refused. */
export const MAX_NAME = 4096;
/** Hop lists longer than this are refused (as @moq/net and Rust do). */
export const MAX_HOPS = 32;
/** SETUP parameter count limit (as @moq/net and Rust). */
export const MAX_SETUP_PARAMETERS = 64;

function msg(body: Encoder): Uint8Array<ArrayBuffer> {
  return new Encoder(body.length + 8).message(body).finish();
}

// ---------------------------------------------------------------- SETUP (05)

/** SETUP parameter ids. */
export const SetupParameter = { Probe: 1n, Path: 2n, Role: 3n, Cost: 4n, Origin: 5n } as const;

/** SETUP (lite-05 only): the parameters each side sends once on its Setup stream. */
export interface Setup {
  /** Probe level: 0 none, 1 report, 2 increase. */
  readonly probe?: number;
  /** Client only, native QUIC only: the request path and query (`/path?jwt=...`). */
  readonly path?: string;
  /** Client only: 0 both, 1 publisher, 2 subscriber. */
  readonly role?: number;
  /** The sender's origin (hop) id; 0 = none. */
  readonly origin?: bigint;
}

/** Encodes SETUP (length-prefixed). */
export function encodeSetup(m: Setup): Uint8Array<ArrayBuffer> {
  const params: [bigint, Uint8Array][] = [];
  const v = (n: number | bigint) => new Encoder(8).varint(n).finish();
  if (m.probe) params.push([SetupParameter.Probe, v(m.probe)]);
  if (m.path) params.push([SetupParameter.Path, new TextEncoder().encode(m.path)]);
  if (m.role) params.push([SetupParameter.Role, v(m.role)]);
  if (m.origin) params.push([SetupParameter.Origin, v(m.origin)]);
  const body = new Encoder().varint(params.length);
  for (const [id, value] of params) body.varint(id).lengthPrefixed(value);
  return msg(body);
}

/** Decodes a SETUP body; unknown parameters are ignored, duplicates are refused. */
export function decodeSetup(body: Uint8Array): Setup {
  const d = new Decoder(body);
  const count = d.u53("SETUP parameter count");
  if (count > MAX_SETUP_PARAMETERS) {
    throw new DecodeError("too-large", `Cannot decode SETUP: ${count} parameters exceeds 64`);
  }
  const seen = new Set<bigint>();
  const out: { probe?: number; path?: string; role?: number; origin?: bigint } = {};
  const varintValue = (value: Uint8Array, what: string): bigint => {
    const vd = new Decoder(value);
    const n = vd.u62(what);
    vd.end(what);
    return n;
  };
  for (let i = 0; i < count; i++) {
    const id = d.u62("SETUP parameter id");
    const value = d.lengthPrefixed("SETUP parameter", MAX_CONTROL_MESSAGE);
    if (seen.has(id)) {
      throw new DecodeError("invalid", `Cannot decode SETUP: duplicate parameter "${id}"`);
    }
    seen.add(id);
    if (id === SetupParameter.Probe) {
      out.probe = Number(min(varintValue(value, "SETUP Probe"), 2n));
    } else if (id === SetupParameter.Path) {
      try {
        const path = new TextDecoder("utf-8", { fatal: true }).decode(value);
        if (path) out.path = path;
      } catch {
        throw new DecodeError("invalid", "Cannot decode SETUP Path: not UTF-8");
      }
    } else if (id === SetupParameter.Role) {
      const role = varintValue(value, "SETUP Role");
      out.role = role === 1n || role === 2n ? Number(role) : 0;
    } else if (id === SetupParameter.Origin) {
      out.origin = varintValue(value, "SETUP Origin");
    }
  }
  d.end("SETUP");
  return out;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

// ---------------------------------------------------------------- ANNOUNCE

/** ANNOUNCE_INTEREST (04) / ANNOUNCE_REQUEST (05): same bytes. */
export interface AnnounceRequest {
  /** Broadcast path prefix (wire spelling). */
  readonly prefix: string;
  /** Skip announcements whose hop path contains this id; 0 = none. */
  readonly excludeHop: bigint;
}

/** Encodes ANNOUNCE_INTEREST / ANNOUNCE_REQUEST. */
export function encodeAnnounceRequest(m: AnnounceRequest): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().string(m.prefix).varint(m.excludeHop));
}

/** Decodes ANNOUNCE_INTEREST / ANNOUNCE_REQUEST. */
export function decodeAnnounceRequest(body: Uint8Array): AnnounceRequest {
  const d = new Decoder(body);
  const prefix = d.string("announce prefix", MAX_NAME);
  const excludeHop = d.u62("exclude hop");
  d.end("ANNOUNCE_REQUEST");
  return { prefix, excludeHop };
}

/** ANNOUNCE_OK (05): the responder's hop id and the size of the initial snapshot. */
export interface AnnounceOk {
  /** Responder's origin id; 0 = unknown. */
  readonly hop: bigint;
  /** How many ANNOUNCE_BROADCAST(active) form the initial set. */
  readonly activeCount: number;
}

/** Encodes ANNOUNCE_OK. */
export function encodeAnnounceOk(m: AnnounceOk): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().varint(m.hop).varint(m.activeCount));
}

/** Decodes ANNOUNCE_OK. */
export function decodeAnnounceOk(body: Uint8Array): AnnounceOk {
  const d = new Decoder(body);
  const hop = d.u62("announce hop");
  const activeCount = d.u53("announce active count");
  d.end("ANNOUNCE_OK");
  return { hop, activeCount };
}

/** ANNOUNCE (04) / ANNOUNCE_BROADCAST (05). */
export interface Announce {
  /** True for active (status 1, or 2 = restart on lite-05), false for ended. */
  readonly active: boolean;
  /** Path suffix relative to the requested prefix. */
  readonly suffix: string;
  /** Hop ids, origin first. */
  readonly hops: readonly bigint[];
}

/** Encodes ANNOUNCE / ANNOUNCE_BROADCAST. */
export function encodeAnnounce(m: Announce): Uint8Array<ArrayBuffer> {
  if (m.hops.length > MAX_HOPS) throw new RangeError(`Cannot encode ${m.hops.length} hops`);
  const body = new Encoder().u8(m.active ? 1 : 0).string(m.suffix).varint(m.hops.length);
  for (const hop of m.hops) body.varint(hop);
  return msg(body);
}

/** Decodes ANNOUNCE / ANNOUNCE_BROADCAST (status 2 is accepted only on lite-05). */
export function decodeAnnounce(body: Uint8Array, version: Version): Announce {
  const d = new Decoder(body);
  const status = d.u8("announce status");
  if (status > (version === "moq-lite-05" ? 2 : 1)) {
    throw new DecodeError("invalid", `Cannot decode ANNOUNCE: status "${status}"`);
  }
  const suffix = d.string("announce suffix", MAX_NAME);
  const count = d.u53("hop count");
  if (count > MAX_HOPS) {
    throw new DecodeError("too-large", `Cannot decode ANNOUNCE: ${count} hops exceeds 32`);
  }
  const hops: bigint[] = [];
  for (let i = 0; i < count; i++) hops.push(d.u62("hop id"));
  d.end("ANNOUNCE");
  return { active: status !== 0, suffix, hops };
}

// ---------------------------------------------------------------- TRACK (05)

/** TRACK (05): asks for a track's properties. */
export interface TrackRequest {
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
}

/** Encodes TRACK. */
export function encodeTrackRequest(m: TrackRequest): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().string(m.path).string(m.track));
}

/** Decodes TRACK. */
export function decodeTrackRequest(body: Uint8Array): TrackRequest {
  const d = new Decoder(body);
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  d.end("TRACK");
  return { path, track };
}

/** TRACK_INFO (05): the publisher's track properties. */
export interface TrackInfo {
  /** Publisher priority (0..255). */
  readonly priority: number;
  /** Deliver groups in order. */
  readonly ordered: boolean;
  /** Cache retention for non-latest groups, ms. */
  readonly maxLatency: number;
  /** Timestamp units per second (non-zero). */
  readonly timescale: number;
}

/** Encodes TRACK_INFO. */
export function encodeTrackInfo(m: TrackInfo): Uint8Array<ArrayBuffer> {
  if (m.timescale <= 0) throw new RangeError(`Cannot encode timescale "${m.timescale}"`);
  return msg(
    new Encoder().u8(m.priority).bool(m.ordered).varint(m.maxLatency).varint(m.timescale),
  );
}

/** Decodes TRACK_INFO; a zero timescale is invalid. */
export function decodeTrackInfo(body: Uint8Array): TrackInfo {
  const d = new Decoder(body);
  const priority = d.u8("priority");
  const ordered = d.bool("ordered");
  const maxLatency = d.u53("max latency");
  const timescale = d.u53("timescale");
  d.end("TRACK_INFO");
  if (timescale === 0) throw new DecodeError("invalid", "Cannot decode TRACK_INFO: timescale 0");
  return { priority, ordered, maxLatency, timescale };
}

// ---------------------------------------------------------------- SUBSCRIBE

/** SUBSCRIBE: opens a subscription. Groups are absolute sequences; undefined = default. */
export interface Subscribe {
  /** Subscriber-chosen id, unique per session. */
  readonly id: bigint;
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Subscriber priority (0..255). */
  readonly priority: number;
  /** Oldest group first. */
  readonly ordered: boolean;
  /** Max latency in ms; 0 = default. */
  readonly maxLatency: number;
  /** First group wanted; undefined = latest. */
  readonly start: number | undefined;
  /** Last group wanted (inclusive); undefined = unbounded. */
  readonly end: number | undefined;
}

/** SUBSCRIBE_UPDATE: changes a subscription. */
export type SubscribeUpdate = Omit<Subscribe, "id" | "path" | "track">;

function encodeRange(e: Encoder, m: SubscribeUpdate): Encoder {
  return e.u8(m.priority).bool(m.ordered).varint(m.maxLatency)
    .varint(m.start === undefined ? 0 : m.start + 1)
    .varint(m.end === undefined ? 0 : m.end + 1);
}

function decodeRange(d: Decoder): SubscribeUpdate {
  const priority = d.u8("priority");
  const ordered = d.bool("ordered");
  const maxLatency = d.u53("max latency");
  const start = d.u53("start group");
  const end = d.u53("end group");
  return {
    priority,
    ordered,
    maxLatency,
    start: start === 0 ? undefined : start - 1,
    end: end === 0 ? undefined : end - 1,
  };
}

/** Encodes SUBSCRIBE. */
export function encodeSubscribe(m: Subscribe): Uint8Array<ArrayBuffer> {
  return msg(encodeRange(new Encoder().varint(m.id).string(m.path).string(m.track), m));
}

/** Decodes SUBSCRIBE. */
export function decodeSubscribe(body: Uint8Array): Subscribe {
  const d = new Decoder(body);
  const id = d.u62("subscribe id");
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  const range = decodeRange(d);
  d.end("SUBSCRIBE");
  return { id, path, track, ...range };
}

/** Encodes SUBSCRIBE_UPDATE. */
export function encodeSubscribeUpdate(m: SubscribeUpdate): Uint8Array<ArrayBuffer> {
  return msg(encodeRange(new Encoder(), m));
}

/** Decodes SUBSCRIBE_UPDATE. */
export function decodeSubscribeUpdate(body: Uint8Array): SubscribeUpdate {
  const d = new Decoder(body);
  const range = decodeRange(d);
  d.end("SUBSCRIBE_UPDATE");
  return range;
}

/** Publisher → subscriber responses on the Subscribe stream, both versions. */
export type SubscribeResponse =
  /** lite-04 SUBSCRIBE_OK (type 0). */
  | {
    readonly kind: "ok";
    readonly priority: number;
    readonly ordered: boolean;
    readonly maxLatency: number;
    readonly start: number | undefined;
    readonly end: number | undefined;
  }
  /** lite-05 SUBSCRIBE_START (type 0): first group that will be delivered. */
  | { readonly kind: "start"; readonly group: number }
  /** lite-05 SUBSCRIBE_END (type 1): exclusive end (first group never delivered). */
  | { readonly kind: "end"; readonly group: number }
  /** SUBSCRIBE_DROP (04 type 1, 05 type 2): groups start..end (inclusive) will not arrive. */
  | { readonly kind: "drop"; readonly start: number; readonly end: number; readonly code: number };

/** Encodes a subscribe response with its type prefix; kinds not in `version` throw. */
export function encodeSubscribeResponse(
  r: SubscribeResponse,
  version: Version,
): Uint8Array<ArrayBuffer> {
  const v05 = version === "moq-lite-05";
  const out = new Encoder(16);
  switch (r.kind) {
    case "ok":
      if (v05) throw new TypeError("Cannot encode SUBSCRIBE_OK on moq-lite-05");
      return out.varint(0).message(encodeRange(new Encoder(), { ...r })).finish();
    case "start":
    case "end":
      if (!v05) throw new TypeError(`Cannot encode SUBSCRIBE_${r.kind} on moq-lite-04`);
      return out.varint(r.kind === "start" ? 0 : 1).message(new Encoder().varint(r.group))
        .finish();
    case "drop":
      return out.varint(v05 ? 2 : 1)
        .message(new Encoder().varint(r.start).varint(r.end).varint(r.code)).finish();
  }
}

/** Decodes a subscribe response body of the given type. */
export function decodeSubscribeResponse(
  type: number,
  body: Uint8Array,
  version: Version,
): SubscribeResponse {
  const d = new Decoder(body);
  let r: SubscribeResponse;
  if (version === "moq-lite-04") {
    if (type === 0) r = { kind: "ok", ...decodeRange(d) };
    else if (type === 1) r = decodeDrop(d);
    else throw new DecodeError("invalid", `Cannot decode subscribe response type "${type}"`);
  } else {
    if (type === 0) r = { kind: "start", group: d.u53("start group") };
    else if (type === 1) r = { kind: "end", group: d.u53("end group") };
    else if (type === 2) r = decodeDrop(d);
    else throw new DecodeError("invalid", `Cannot decode subscribe response type "${type}"`);
  }
  d.end("subscribe response");
  return r;
}

function decodeDrop(d: Decoder): SubscribeResponse {
  return {
    kind: "drop",
    start: d.u53("drop start"),
    end: d.u53("drop end"),
    code: d.u53("drop error code"),
  };
}

// ---------------------------------------------------------------- GROUP / FRAME

/** GROUP header on a group stream. */
export interface GroupHeader {
  /** The subscription the group belongs to. */
  readonly subscribeId: bigint;
  /** Absolute group sequence. */
  readonly sequence: number;
}

/** Encodes the stream type and GROUP header of a group stream. */
export function encodeGroupStreamHeader(m: GroupHeader): Uint8Array<ArrayBuffer> {
  return new Encoder(20).varint(UniType.Group)
    .message(new Encoder(16).varint(m.subscribeId).varint(m.sequence)).finish();
}

/** Decodes a GROUP body. */
export function decodeGroupHeader(body: Uint8Array): GroupHeader {
  const d = new Decoder(body);
  const subscribeId = d.u62("subscribe id");
  const sequence = d.u53("group sequence");
  d.end("GROUP");
  return { subscribeId, sequence };
}

/**
 * Encodes frames as they follow a GROUP header or answer a FETCH. On lite-05
 * each frame carries a zigzag timestamp delta (baseline 0 per group); all
 * frames of a group share `timestamp` unless `timestamps` gives one per frame.
 */
export function encodeFrames(
  frames: readonly Uint8Array[],
  version: Version,
  timestamp = 0,
  timestamps?: readonly number[],
): Uint8Array<ArrayBuffer> {
  let size = 0;
  for (const f of frames) size += f.length + 16;
  const out = new Encoder(size);
  let previous = 0n;
  frames.forEach((frame, i) => {
    if (version === "moq-lite-05") {
      const ts = BigInt(timestamps?.[i] ?? timestamp);
      out.varint(zigzagEncode(ts - previous));
      previous = ts;
    }
    out.lengthPrefixed(frame);
  });
  return out.finish();
}

/** A decoded frame. */
export interface Frame {
  /** Absolute timestamp in the track timescale (lite-05), else 0. */
  readonly timestamp: number;
  /** The frame's bytes. */
  readonly payload: Uint8Array;
}

/** Decodes a complete run of frames (a group's remainder or a FETCH response). */
export function decodeFrames(bytes: Uint8Array, version: Version, maxFrame = 1 << 26): Frame[] {
  const d = new Decoder(bytes);
  const out: Frame[] = [];
  let ts = 0n;
  while (d.remaining > 0) {
    if (version === "moq-lite-05") {
      ts += zigzagDecode(d.u62("timestamp delta"));
      if (ts < 0n || ts > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new DecodeError("invalid", `Cannot decode frame: timestamp "${ts}" out of range`);
      }
    }
    out.push({ timestamp: Number(ts), payload: d.lengthPrefixed("frame", maxFrame) });
  }
  return out;
}

// ---------------------------------------------------------------- FETCH, PROBE, GOAWAY

/** FETCH: one group's frames. */
export interface Fetch {
  /** Broadcast path (wire spelling). */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** Subscriber priority. */
  readonly priority: number;
  /** Absolute group sequence. */
  readonly group: number;
}

/** Encodes FETCH. */
export function encodeFetch(m: Fetch): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().string(m.path).string(m.track).u8(m.priority).varint(m.group));
}

/** Decodes FETCH. */
export function decodeFetch(body: Uint8Array): Fetch {
  const d = new Decoder(body);
  const path = d.string("broadcast path", MAX_NAME);
  const track = d.string("track name", MAX_NAME);
  const priority = d.u8("priority");
  const group = d.u53("group sequence");
  d.end("FETCH");
  return { path, track, priority, group };
}

/** PROBE: bitrate (bits/s) and RTT (ms), 0 = unknown. */
export interface Probe {
  /** Bits per second. */
  readonly bitrate: number;
  /** Smoothed RTT in ms. */
  readonly rtt: number;
}

/** Encodes PROBE. */
export function encodeProbe(m: Probe): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().varint(m.bitrate).varint(m.rtt));
}

/** Decodes PROBE. */
export function decodeProbe(body: Uint8Array): Probe {
  const d = new Decoder(body);
  const bitrate = d.u53("bitrate");
  const rtt = d.u53("rtt");
  d.end("PROBE");
  return { bitrate, rtt };
}

/** GOAWAY: the session should move to `uri` (may be empty). */
export interface Goaway {
  /** New session URI, or "". */
  readonly uri: string;
}

/** Encodes GOAWAY. */
export function encodeGoaway(m: Goaway): Uint8Array<ArrayBuffer> {
  return msg(new Encoder().string(m.uri));
}

/** Decodes GOAWAY. */
export function decodeGoaway(body: Uint8Array): Goaway {
  const d = new Decoder(body);
  const uri = d.string("goaway uri", MAX_NAME);
  d.end("GOAWAY");
  return { uri };
}

// ---------------------------------------------------------------- DATAGRAM (05)

/** A lite-05 datagram: a complete single-frame group. */
export interface Datagram {
  /** Subscription id. */
  readonly subscribeId: bigint;
  /** Group sequence. */
  readonly sequence: number;
  /** Absolute timestamp. */
  readonly timestamp: number;
  /** The frame. */
  readonly payload: Uint8Array;
}

/** Encodes a datagram body. */
export function encodeDatagram(m: Datagram): Uint8Array<ArrayBuffer> {
  return new Encoder(m.payload.length + 24).varint(m.subscribeId).varint(m.sequence)
    .varint(m.timestamp).bytes(m.payload).finish();
}

/** Decodes a datagram body. */
export function decodeDatagram(bytes: Uint8Array): Datagram {
  const d = new Decoder(bytes);
  const subscribeId = d.u62("subscribe id");
  const sequence = d.u53("group sequence");
  const timestamp = d.u53("timestamp");
  return { subscribeId, sequence, timestamp, payload: d.rest() };
}
