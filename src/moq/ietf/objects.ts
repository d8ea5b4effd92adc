/**
 * Objects on subgroup streams: the SUBGROUP_HEADER that opens a stream and
 * the objects after it. sluice sends one subgroup (0) per group, so a group
 * maps to one stream and each frame to one object, ids from 0.
 */
import { DecodeError, type StreamReader } from "../../wire/mod.ts";
import { decoderFor, encoderFor, needVarint, readVarint } from "./wire.ts";
import type { IetfDraft } from "./version.ts";
import { readProperties, TIMESTAMP_PROPERTY } from "./properties.ts";

/** A subgroup stream's header. */
export interface SubgroupHeader {
  /** The track alias the SUBSCRIBE_OK chose. */
  readonly trackAlias: bigint;
  /** The group. */
  readonly group: number;
  /** The subgroup (undefined: equal to the first object's id). */
  readonly subgroup: number | undefined;
  /** Publisher priority. */
  readonly priority: number;
  /** Objects carry an extensions block. */
  readonly extensions: boolean;
  /** The stream's FIN ends the group. */
  readonly endOfGroup: boolean;
  /** The stream starts at the group's first object (draft 18 on says so; earlier drafts always). */
  readonly firstObject: boolean;
}

/** Draft 18 on: the header type bit that says the subgroup starts at the group's first object. */
const FIRST_OBJECT = 0x40;

/**
 * Subgroup stream types: 0x10..0x1d but for 0x16 and 0x17; from draft 17
 * also 0x30..0x3d (no priority byte), and from draft 18 either with the
 * FIRST_OBJECT bit.
 */
export function isSubgroupType(type: number, draft: IetfDraft): boolean {
  const base = draft >= 18 ? type & ~FIRST_OBJECT : type;
  const low = draft >= 17 && base >= 0x30 ? base - 0x20 : base;
  return low >= 0x10 && low <= 0x1d && (low & 0x06) !== 0x06;
}

/** Reads a subgroup header after its type. */
export async function readSubgroupHeader(
  r: StreamReader,
  type: number,
  draft: IetfDraft,
): Promise<SubgroupHeader> {
  if (!isSubgroupType(type, draft)) {
    throw new DecodeError("invalid", `Unknown data stream type "${type}"`);
  }
  const firstObject = draft < 18 || (type & FIRST_OBJECT) !== 0;
  const base = draft >= 18 ? type & ~FIRST_OBJECT : type;
  const trackAlias = BigInt(await needVarint(r, draft, "track alias"));
  const group = await needVarint(r, draft, "group id");
  // Bit 2: an explicit subgroup id; bit 1: the subgroup is the first object's id; neither: 0.
  const subgroup = base & 0x04
    ? await needVarint(r, draft, "subgroup id")
    : base & 0x02
    ? undefined
    : 0;
  // 0x30..0x3d carry no priority (the publisher's default).
  const priority = base >= 0x30 ? 128 : await r.u8();
  if (priority === undefined) throw new DecodeError("truncated", "Subgroup header ended early");
  return {
    trackAlias,
    group,
    subgroup,
    priority,
    extensions: (base & 0x01) !== 0,
    endOfGroup: (base & 0x08) !== 0,
    firstObject,
  };
}

/** Encodes the header sluice sends: subgroup 0, FIN ends the group, whole (`extensions`: objects carry properties). */
export function encodeSubgroupHeader(
  trackAlias: bigint,
  group: number,
  priority: number,
  draft: IetfDraft,
  extensions = false,
): Uint8Array<ArrayBuffer> {
  const base = extensions ? 0x19 : 0x18;
  const type = draft >= 18 ? base | FIRST_OBJECT : base;
  return encoderFor(draft, 32).varint(type).varint(trackAlias).varint(group).u8(priority)
    .finish();
}

/**
 * Encodes one object of a sluice subgroup: every id follows the one before
 * (delta 0). With `timestamp` (a stream whose header says extensions) the
 * object carries it as its TIMESTAMP property.
 */
export function encodeObject(
  payload: Uint8Array,
  draft: IetfDraft,
  timestamp?: bigint,
): Uint8Array<ArrayBuffer> {
  const e = encoderFor(draft, payload.length + 32).varint(0);
  if (timestamp !== undefined) {
    const property = encoderFor(draft, 16).varint(TIMESTAMP_PROPERTY).varint(timestamp).finish();
    e.varint(property.length).bytes(property);
  }
  e.varint(payload.length);
  // A zero-length object carries its status: 0, a normal (empty) object.
  if (payload.length === 0) e.varint(0);
  else e.bytes(payload);
  return e.finish();
}

/** Object status values (draft 14). */
export const ObjectStatus = { Normal: 0, DoesNotExist: 1, EndOfGroup: 3, EndOfTrack: 4 } as const;

/** One object read from a subgroup stream. */
export interface ReadObject {
  /** The object id. */
  readonly id: number;
  /** The payload (undefined for a status-only object). */
  readonly payload: Uint8Array | undefined;
  /** The status of a zero-length object. */
  readonly status: number;
  /** Its TIMESTAMP property (draft 17 on), in the track's timescale. */
  readonly timestamp?: bigint;
}

/** The most property bytes of an object that are read (more are skipped unread). */
const MAX_PROPERTY_BYTES = 4096;

/**
 * Reads the next object, or undefined at the stream's end. `previous` is the
 * last object's id (undefined before the first); `admit` is told a payload's
 * length before it is read, and throws (or waits) to bound it.
 */
export async function readObject(
  r: StreamReader,
  header: SubgroupHeader,
  previous: number | undefined,
  admit: (length: number) => Promise<void> | void,
  draft: IetfDraft,
): Promise<ReadObject | undefined> {
  const delta = await readVarint(r, draft, "object id delta");
  if (delta === undefined) return undefined;
  const id = previous === undefined ? delta : previous + delta + 1;
  let timestamp: bigint | undefined;
  if (header.extensions) {
    const n = await needVarint(r, draft, "extensions length");
    if (draft < 17 || n > MAX_PROPERTY_BYTES) await r.skip(n, "extensions");
    else {
      const t = readProperties(decoderFor(await r.bytes(n, "extensions"), draft))
        .get(BigInt(TIMESTAMP_PROPERTY));
      if (typeof t === "bigint") timestamp = t;
    }
  }
  const length = await needVarint(r, draft, "object length");
  if (length > 0) await admit(length);
  const stamp = timestamp === undefined ? {} : { timestamp };
  if (length === 0) {
    return {
      id,
      payload: undefined,
      status: await needVarint(r, draft, "object status"),
      ...stamp,
    };
  }
  return { id, payload: await r.bytes(length, "object"), status: ObjectStatus.Normal, ...stamp };
}
