/**
 * The fields IETF control messages share, per draft: namespace tuples,
 * key-value parameters and the draft 17+ SETUP options.
 */
import { DecodeError, type Decoder, type Encoder } from "../../wire/mod.ts";
import { decoderFor, encoderFor } from "./wire.ts";
import type { IetfDraft } from "./version.ts";

/** A draft 14 namespace has at most 32 fields. */
export const MAX_NAMESPACE_FIELDS = 32;
const MAX_PARAMETERS = 64;

/** A key-value parameter: even keys carry a varint, odd keys bytes. */
export type Parameters = Map<bigint, bigint | Uint8Array>;

/** Setup parameter keys. */
export const SetupParam = { Path: 1n, MaxRequestId: 2n, AuthorizationToken: 3n } as const;

/** A namespace tuple as a sluice path ("a/b"): one field per segment. */
export function namespaceToPath(fields: readonly string[]): string {
  return fields.join("/");
}

/** A sluice path as a namespace tuple ("" is the empty tuple). */
export function pathToNamespace(path: string): string[] {
  return path === "" ? [] : path.split("/");
}

/** Writes a namespace tuple from a path. */
export function writeNamespace(e: Encoder, path: string): void {
  const fields = pathToNamespace(path);
  e.varint(fields.length);
  for (const f of fields) e.string(f);
}

/** Reads a namespace tuple as a path (at most 32 fields, none holding "/"). */
export function readNamespace(d: Decoder): string {
  const n = d.u53("namespace field count");
  if (n > MAX_NAMESPACE_FIELDS) {
    throw new DecodeError("invalid", `Cannot read namespace: ${n} fields exceeds 32`);
  }
  const fields: string[] = [];
  for (let i = 0; i < n; i++) {
    const f = d.string("namespace field", 4096);
    if (f.includes("/")) {
      throw new DecodeError("invalid", `Cannot read namespace: field "${f}" contains "/"`);
    }
    fields.push(f);
  }
  return namespaceToPath(fields);
}

/**
 * How a draft 17+ message parameter's value is written: the draft defines it
 * per key (a byte, a bool, a varint, or length-prefixed bytes), so a key it
 * does not define cannot even be skipped.
 */
const PARAMETER_KIND: ReadonlyMap<bigint, "varint" | "u8" | "bool" | "bytes"> = new Map([
  [0x02n, "varint"], // DELIVERY_TIMEOUT
  [0x04n, "varint"], // MAX_CACHE_DURATION
  [0x06n, "varint"], // SUBGROUP_DELIVERY_TIMEOUT
  [0x08n, "varint"], // EXPIRES
  [0x0en, "u8"], // PUBLISHER_PRIORITY
  [0x10n, "bool"], // FORWARD
  [0x20n, "u8"], // SUBSCRIBER_PRIORITY
  [0x22n, "u8"], // GROUP_ORDER
  [0x09n, "bytes"], // LARGEST_OBJECT
  [0x21n, "bytes"], // LOCATION_FILTER
  [0x23n, "bytes"], // FILL_PARAMETERS
  [0x35n, "bytes"], // INCLUDE_PROPERTIES
  [0x40b57n, "bytes"], // HOP_PATH (MoQ Cluster)
  [0x40b58n, "varint"], // ROUTE_COST (MoQ Cluster)
]);

function parameterKind(key: bigint): "varint" | "u8" | "bool" | "bytes" {
  const kind = PARAMETER_KIND.get(key);
  if (!kind) throw new DecodeError("invalid", `Unknown message parameter "${key}"`);
  return kind;
}

/** Writes a message's parameters as `draft` encodes them. */
export function writeParameters(e: Encoder, params: Parameters, draft: IetfDraft): void {
  e.varint(params.size);
  // Draft 16 sends keys in ascending order, each as the difference from the one before.
  const keys = [...params.keys()];
  if (draft >= 16) keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let previous = 0n;
  for (const key of keys) {
    const value = params.get(key)!;
    e.varint(draft >= 16 ? key - previous : key);
    previous = key;
    const kind = draft >= 17 ? parameterKind(key) : typeof value === "bigint" ? "varint" : "bytes";
    if (typeof value !== "bigint") e.lengthPrefixed(value);
    else if (kind === "u8") e.u8(Number(value));
    else if (kind === "bool") e.bool(value === 1n);
    else e.varint(value);
  }
}

/** Reads a message's parameters (at most 64, none twice). */
export function readParameters(d: Decoder, draft: IetfDraft): Parameters {
  const n = d.u53("parameter count");
  if (n > MAX_PARAMETERS) {
    throw new DecodeError("invalid", `Cannot read parameters: ${n} exceeds ${MAX_PARAMETERS}`);
  }
  const params: Parameters = new Map();
  let previous = 0n;
  for (let i = 0; i < n; i++) {
    const key = draft >= 16 ? previous + d.u62("parameter key delta") : d.u62("parameter key");
    previous = key;
    if (params.has(key)) throw new DecodeError("invalid", `Duplicate parameter "${key}"`);
    if (draft >= 17) {
      const kind = parameterKind(key);
      params.set(
        key,
        kind === "bytes"
          ? d.lengthPrefixed("parameter", 8192)
          : kind === "u8"
          ? BigInt(d.u8("parameter"))
          : kind === "bool"
          ? (d.bool("parameter") ? 1n : 0n)
          : d.u62("parameter value"),
      );
      continue;
    }
    params.set(
      key,
      key % 2n === 0n ? d.u62("parameter value") : d.lengthPrefixed("parameter", 8192),
    );
  }
  return params;
}

/** Draft 17+ SETUP options: no count, delta-encoded keys, even a varint, odd bytes, to the end. */
export function decodeSetupOptions(body: Uint8Array, draft: IetfDraft): Parameters {
  const d = decoderFor(body, draft);
  const params: Parameters = new Map();
  let previous = 0n;
  while (d.remaining > 0) {
    if (params.size >= MAX_PARAMETERS) throw new DecodeError("invalid", "Too many setup options");
    const key = previous + d.u62("setup option key");
    previous = key;
    if (params.has(key)) throw new DecodeError("invalid", `Duplicate setup option "${key}"`);
    params.set(
      key,
      key % 2n === 0n ? d.u62("setup option") : d.lengthPrefixed("setup option", 8192),
    );
  }
  return params;
}

/** Encodes draft 17+ SETUP options. */
export function encodeSetupOptions(params: Parameters, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  let previous = 0n;
  for (const key of [...params.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const value = params.get(key)!;
    e.varint(key - previous);
    previous = key;
    if (typeof value === "bigint") e.varint(value);
    else e.lengthPrefixed(value);
  }
  return e.finish();
}
