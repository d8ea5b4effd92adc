/**
 * FETCH on the wire, drafts 14, 16 and 20: the request (standalone or
 * joining), FETCH_OK, and the fetch stream (FETCH_HEADER, then objects,
 * each in its draft's serialization). Ranges are held in one form whatever
 * the draft: a start, and an inclusive end whose object may be "the whole
 * group".
 */
import { DecodeError, type Decoder, type Encoder, type StreamReader } from "../../wire/mod.ts";
import { frameControl, Msg } from "./control.ts";
import {
  byteParam,
  MessageParam,
  type Parameters,
  readNamespace,
  readParameters,
  writeNamespace,
  writeParameters,
} from "./messages.ts";
import type { IetfDraft } from "./version.ts";
import { decoderFor, encoderFor, needVarint, readVarint } from "./wire.ts";

/** A location in a track. */
export interface Location {
  /** The group. */
  readonly group: number;
  /** The object within it. */
  readonly object: number;
}

/** Where a fetch starts: a location, or a count of groups back from the next group. */
export type FetchStart = Location | { readonly groupsBack: number };

/** The inclusive end of a fetch; no object: the whole group. */
export interface FetchEnd {
  /** The last group. */
  readonly group: number;
  /** The last object in it (undefined: every object of the group). */
  readonly object?: number;
}

/** What a FETCH asks for. */
export type FetchRange =
  | {
    readonly kind: "standalone";
    readonly path: string;
    readonly track: string;
    /** Undefined: from {0, 0}. */
    readonly start?: FetchStart;
    /** Undefined: up to the largest object. */
    readonly end?: FetchEnd;
  }
  | {
    readonly kind: "joining";
    /** The SUBSCRIBE it joins. */
    readonly joinId: bigint;
    readonly start: FetchStart;
  };

/** FETCH. */
export interface Fetch {
  /** The request id. */
  readonly requestId: bigint;
  /** Subscriber priority 0..255. */
  readonly priority: number;
  /** 0 publisher's choice, 1 ascending, 2 descending. */
  readonly groupOrder: number;
  /** The range. */
  readonly range: FetchRange;
}

/** The fetch stream's type (FETCH_HEADER). */
export const FETCH_STREAM = 0x05;

const FetchType = { Standalone: 1, Relative: 2, Absolute: 3 } as const;

// Draft 20's LOCATION_FILTER of a fetch: up to four fields, their count deciding the form.
function readLocationFilter(raw: Uint8Array, draft: IetfDraft): {
  start?: FetchStart;
  end?: FetchEnd;
} {
  const d = decoderFor(raw, draft);
  const f: number[] = [];
  while (d.remaining > 0) {
    if (f.length === 4) throw new DecodeError("invalid", "Too many location filter fields");
    f.push(d.u53("location filter field"));
  }
  const [a, b, c, e] = f;
  if (a === undefined) return {};
  if (b === undefined) return { start: { groupsBack: a } };
  const start = { group: a, object: b };
  if (c === undefined) return { start };
  return { start, end: { group: a + c, ...(e === undefined ? {} : { object: e }) } };
}

function writeLocationFilter(e: Encoder, start: FetchStart | undefined, end?: FetchEnd): void {
  if (start === undefined) return;
  if ("groupsBack" in start) {
    e.varint(start.groupsBack);
    return;
  }
  e.varint(start.group).varint(start.object);
  if (!end) return;
  e.varint(end.group - start.group);
  if (end.object !== undefined) e.varint(end.object);
}

/** Decodes FETCH. */
export function decodeFetch(body: Uint8Array, draft: IetfDraft): Fetch {
  const d = decoderFor(body, draft);
  const requestId = d.u62("request id");
  let priority = 128;
  let groupOrder = 0;
  if (draft < 16) {
    priority = d.u8("subscriber priority");
    groupOrder = d.u8("group order");
  }
  const type = d.u53("fetch type");
  let range: FetchRange;
  if (type === FetchType.Standalone) {
    const path = readNamespace(d);
    const track = d.string("track name", 4096);
    range = draft >= 17 ? { kind: "standalone", path, track } : {
      kind: "standalone",
      path,
      track,
      start: { group: d.u53("start group"), object: d.u53("start object") },
      ...endOf(d.u53("end group"), d.u53("end object")),
    };
  } else if (type === FetchType.Relative || type === FetchType.Absolute) {
    const joinId = d.u62("joining request id");
    // Draft 20 moved the joining start into the location filter.
    const at = draft >= 17 ? 0 : d.u53("joining start");
    range = {
      kind: "joining",
      joinId,
      start: type === FetchType.Relative ? { groupsBack: at + 1 } : { group: at, object: 0 },
    };
  } else throw new DecodeError("invalid", `Unknown fetch type "${type}"`);
  const params = readParameters(d, draft);
  d.end("FETCH");
  if (draft >= 16) {
    priority = byteParam(params, MessageParam.SubscriberPriority, 128, 255);
    groupOrder = byteParam(params, MessageParam.GroupOrder, 0, 2);
  }
  if (groupOrder > 2) throw new DecodeError("invalid", `Unknown group order "${groupOrder}"`);
  const filter = params.get(MessageParam.SubscriptionFilter);
  if (draft >= 17 && filter instanceof Uint8Array) {
    const { start, end } = readLocationFilter(filter, draft);
    if (range.kind === "standalone") {
      range = { ...range, ...(start ? { start } : {}), ...(end ? { end } : {}) };
    } else if (start) {
      // StartGroup alone: {Joining.Group + 1 - StartGroup, 0}; absolute: {StartGroup, 0}.
      const relative = type === FetchType.Relative;
      const n = "groupsBack" in start ? start.groupsBack : start.group;
      range = { ...range, start: relative ? { groupsBack: n } : { group: n, object: 0 } };
    }
  }
  return { requestId, priority, groupOrder, range };
}

// Drafts 14 and 16 name the end "plus one": an object of 0 asks for the whole group.
function endOf(group: number, object: number): { end: FetchEnd } {
  return { end: object === 0 ? { group } : { group, object: object - 1 } };
}

/** Encodes FETCH. */
export function encodeFetch(m: Fetch, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft).varint(m.requestId);
  if (draft < 16) e.u8(m.priority).u8(m.groupOrder);
  const r = m.range;
  const params: Parameters = new Map();
  if (draft >= 16) {
    params.set(MessageParam.SubscriberPriority, BigInt(m.priority));
    if (m.groupOrder !== 0) params.set(MessageParam.GroupOrder, BigInt(m.groupOrder));
  }
  if (r.kind === "standalone") {
    e.varint(FetchType.Standalone);
    writeNamespace(e, r.path);
    e.string(r.track);
    if (draft >= 17) {
      const f = encoderFor(draft);
      writeLocationFilter(f, r.start, r.end);
      if (r.start) params.set(MessageParam.SubscriptionFilter, f.finish());
    } else {
      const start = r.start && "group" in r.start ? r.start : { group: 0, object: 0 };
      const end = r.end ?? { group: Number.MAX_SAFE_INTEGER };
      e.varint(start.group).varint(start.object).varint(end.group)
        .varint(end.object === undefined ? 0 : end.object + 1);
    }
  } else {
    const relative = "groupsBack" in r.start;
    e.varint(relative ? FetchType.Relative : FetchType.Absolute).varint(r.joinId);
    const n = "groupsBack" in r.start ? r.start.groupsBack : r.start.group;
    if (draft >= 17) {
      params.set(MessageParam.SubscriptionFilter, encoderFor(draft).varint(n).finish());
    } else e.varint(relative ? n - 1 : n);
  }
  writeParameters(e, params, draft);
  return e.finish();
}

/** FETCH_OK: the last location the fetch covers (inclusive). */
export interface FetchOk {
  /** The FETCH's request id (named on the wire through draft 16). */
  readonly requestId: bigint;
  /** The track ended at `end`. */
  readonly endOfTrack: boolean;
  /** The last object the fetch covers (drafts 14 and 16 may say "the whole group"). */
  readonly end: FetchEnd;
}

/**
 * The framed FETCH_OK: draft 14 adds the group order; drafts 14 and 16 name
 * the end plus one (0: the whole group), draft 20 the last object itself.
 */
export function fetchOk(m: FetchOk, draft: IetfDraft, descending = false): Uint8Array {
  const e = encoderFor(draft);
  if (draft < 17) e.varint(m.requestId);
  if (draft < 16) e.u8(descending ? 2 : 1);
  const object = draft < 17
    ? (m.end.object === undefined ? 0 : m.end.object + 1)
    : (m.end.object ?? 0);
  e.u8(m.endOfTrack ? 1 : 0).varint(m.end.group).varint(object);
  e.varint(0); // no parameters (and, from draft 16, no track properties after them)
  return frameControl(Msg.FetchOk, e.finish(), draft);
}

/** Decodes FETCH_OK. */
export function decodeFetchOk(body: Uint8Array, draft: IetfDraft, onStream = -1n): FetchOk {
  const d = decoderFor(body, draft);
  const requestId = draft < 17 ? d.u62("request id") : onStream;
  if (draft < 16) d.u8("group order");
  const endOfTrack = d.u8("end of track") === 1;
  const group = d.u53("end group");
  const raw = d.u53("end object");
  readParameters(d, draft);
  if (draft < 16) d.end("FETCH_OK");
  else d.rest(); // track properties: none read
  const end = draft >= 17 ? { group, object: raw } : raw === 0 ? { group } : {
    group,
    object: raw - 1,
  };
  return { requestId, endOfTrack, end };
}

/** The fetch stream's opening: its type and the FETCH's request id. */
export function encodeFetchHeader(requestId: bigint, draft: IetfDraft): Uint8Array {
  return encoderFor(draft, 16).varint(FETCH_STREAM).varint(requestId).finish();
}

/** Reads a fetch stream's request id (its type already read). */
export async function readFetchHeader(r: StreamReader, draft: IetfDraft): Promise<bigint> {
  return BigInt(await needVarint(r, draft, "fetch request id"));
}

// Serialization flags (draft 16 on): subgroup 0 in the low bits, then which fields follow.
const OBJECT_PRESENT = 0x04;
const GROUP_PRESENT = 0x08;
const PRIORITY_PRESENT = 0x10;
const EXTENSIONS_PRESENT = 0x20;
const DATAGRAM = 0x40;
const ALL_PRESENT = OBJECT_PRESENT | GROUP_PRESENT | PRIORITY_PRESENT;

/** What the objects of one fetch stream so far leave for the next (both ways). */
export interface FetchCursor {
  /** The previous object's location (undefined before the first). */
  previous: Location | undefined;
  /** The previous object's priority. */
  priority: number;
  /** Groups go in descending order (draft 20 deltas count downwards). */
  readonly descending: boolean;
}

/**
 * Encodes one object of a fetch stream: draft 14 with every field; draft 16
 * with flags and absolute ids; draft 20 with deltas, a group's later objects
 * in one flag byte.
 */
export function encodeFetchObject(
  c: FetchCursor,
  at: Location,
  priority: number,
  payload: Uint8Array,
  draft: IetfDraft,
): Uint8Array<ArrayBuffer> {
  const e = encoderFor(draft, payload.length + 32);
  const prev = c.previous;
  c.previous = at;
  c.priority = priority;
  if (draft < 16) {
    e.varint(at.group).varint(0).varint(at.object).u8(priority).varint(0).varint(payload.length);
    if (payload.length === 0) e.varint(0); // status: a normal, empty object
    return e.bytes(payload).finish();
  }
  if (draft < 17) {
    e.varint(ALL_PRESENT).varint(at.group).varint(at.object).u8(priority);
  } else if (prev && prev.group === at.group && at.object === prev.object + 1) {
    e.varint(0);
  } else {
    const delta = !prev ? at.group : Math.abs(at.group - prev.group) - 1;
    e.varint(ALL_PRESENT).varint(delta).varint(at.object).u8(priority);
  }
  return e.varint(payload.length).bytes(payload).finish();
}

/** One object read from a fetch stream. */
export interface FetchedObject {
  /** Where it is. */
  readonly at: Location;
  /** Its payload. */
  readonly payload: Uint8Array;
}

/** Reads the next object of a fetch stream, or undefined at its end. */
export async function readFetchObject(
  r: StreamReader,
  c: FetchCursor,
  maxPayload: number,
  draft: IetfDraft,
): Promise<FetchedObject | undefined> {
  const first = await readVarint(r, draft, "fetch object");
  if (first === undefined) return undefined;
  let at: Location;
  if (draft < 16) {
    await needVarint(r, draft, "subgroup id");
    at = { group: first, object: await needVarint(r, draft, "object id") };
    c.priority = await needU8(r);
    await r.skip(await needVarint(r, draft, "extensions length"), "extensions");
  } else {
    const flags = first;
    if (flags >= 0x80) {
      throw new DecodeError("invalid", `Fetch object flags "${flags}" unsupported`);
    }
    const prev = c.previous;
    if (!prev && (flags & (GROUP_PRESENT | OBJECT_PRESENT)) !== (GROUP_PRESENT | OBJECT_PRESENT)) {
      throw new DecodeError("invalid", "The first fetch object refers to a prior object");
    }
    if ((flags & DATAGRAM) === 0 && (flags & 0x03) === 0x03) {
      await needVarint(r, draft, "subgroup id");
    }
    let group = prev?.group ?? 0;
    if (flags & GROUP_PRESENT) {
      const g = await needVarint(r, draft, "group id");
      group = draft < 17 || !prev ? g : c.descending ? prev.group - g - 1 : prev.group + g + 1;
    }
    let object: number;
    if (flags & OBJECT_PRESENT) {
      const o = await needVarint(r, draft, "object id");
      object = draft < 17 || !prev || flags & GROUP_PRESENT ? o : prev.object + o;
    } else object = (prev?.object ?? -1) + 1;
    if (flags & PRIORITY_PRESENT) c.priority = await needU8(r);
    if (flags & EXTENSIONS_PRESENT) {
      await r.skip(await needVarint(r, draft, "extensions length"), "extensions");
    }
    at = { group, object };
  }
  const length = await needVarint(r, draft, "object length");
  if (length > maxPayload) {
    throw new DecodeError("too_large", `Cannot read fetch object of ${length} bytes`);
  }
  if (draft < 16 && length === 0) await needVarint(r, draft, "object status");
  c.previous = at;
  return { at, payload: length === 0 ? new Uint8Array() : await r.bytes(length, "object") };
}

async function needU8(r: StreamReader): Promise<number> {
  const b = await r.u8();
  if (b === undefined) throw new DecodeError("truncated", "Fetch object ended early");
  return b;
}

/** Decodes FETCH_CANCEL (drafts 14 and 16): the FETCH's request id. */
export function decodeFetchCancel(body: Uint8Array, draft: IetfDraft): bigint {
  const d: Decoder = decoderFor(body, draft);
  const id = d.u62("request id");
  d.end("FETCH_CANCEL");
  return id;
}
