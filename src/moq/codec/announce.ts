/** ANNOUNCE_INTEREST / ANNOUNCE_REQUEST, ANNOUNCE_OK and ANNOUNCE / ANNOUNCE_BROADCAST. */
import { DecodeError, Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_NAME } from "./length_prefix.ts";
import type { Version } from "./version.ts";

/** Hop lists longer than this are refused (as @moq/net and Rust do). */
export const MAX_HOPS = 32;

/** ANNOUNCE_INTEREST (04) / ANNOUNCE_REQUEST (05): same bytes. */
export interface AnnounceRequest {
  /** Broadcast path prefix (wire spelling). */
  readonly prefix: string;
  /** Skip announcements whose hop path contains this id; 0 = none. */
  readonly excludeHop: bigint;
}

/** Encodes ANNOUNCE_INTEREST / ANNOUNCE_REQUEST. */
export function encodeAnnounceRequest(m: AnnounceRequest): Uint8Array<ArrayBuffer> {
  return encodeMessage(new Encoder().string(m.prefix).varint(m.excludeHop));
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
  return encodeMessage(new Encoder().varint(m.hop).varint(m.activeCount));
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
  return encodeMessage(body);
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
    throw new DecodeError("too_large", `Cannot decode ANNOUNCE: ${count} hops exceeds 32`);
  }
  const hops: bigint[] = [];
  for (let i = 0; i < count; i++) hops.push(d.u62("hop id"));
  d.end("ANNOUNCE");
  return { active: status !== 0, suffix, hops };
}
