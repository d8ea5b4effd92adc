/** SETUP (lite-05): the parameters that open a session, and their limits. */
import { DecodeError, Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage, MAX_CONTROL_MESSAGE } from "./length_prefix.ts";

/** SETUP parameter count limit (as @moq/net and Rust). */
export const MAX_SETUP_PARAMETERS = 64;

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
  return encodeMessage(body);
}

/**
 * Decodes a SETUP body; unknown parameters are ignored, duplicates are
 * refused. A parameter sent with its default (0, or an unknown role) is
 * left out, as if absent, so the value re-encodes to the same meaning.
 */
export function decodeSetup(body: Uint8Array): Setup {
  const d = new Decoder(body);
  const count = d.u53("SETUP parameter count");
  if (count > MAX_SETUP_PARAMETERS) {
    throw new DecodeError("too_large", `Cannot decode SETUP: ${count} parameters exceeds 64`);
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
      const probe = Number(min(varintValue(value, "SETUP Probe"), 2n));
      if (probe !== 0) out.probe = probe;
    } else if (id === SetupParameter.Path) {
      try {
        const path = new TextDecoder("utf-8", { fatal: true }).decode(value);
        if (path) out.path = path;
      } catch {
        throw new DecodeError("invalid", "Cannot decode SETUP Path: not UTF-8");
      }
    } else if (id === SetupParameter.Role) {
      const role = varintValue(value, "SETUP Role");
      if (role === 1n || role === 2n) out.role = Number(role);
    } else if (id === SetupParameter.Origin) {
      const origin = varintValue(value, "SETUP Origin");
      if (origin !== 0n) out.origin = origin;
    }
  }
  d.end("SETUP");
  return out;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
