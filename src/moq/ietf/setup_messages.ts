/** CLIENT_SETUP and SERVER_SETUP, per draft. */
import { DecodeError } from "../../wire/mod.ts";
import { decoderFor, done, encoderFor } from "./wire.ts";
import { IETF_VERSION, type IetfDraft } from "./version.ts";
import { type Parameters, readParameters, writeParameters } from "./message_fields.ts";

const MAX_VERSIONS = 64;

/** CLIENT_SETUP: the versions the client offers and its parameters. */
export interface ClientSetup {
  /** Offered versions (draft 14 lists them; from draft 15 ALPN chose, so it is that draft's). */
  readonly versions: readonly number[];
  /** Setup parameters. */
  readonly params: Parameters;
}

/** Decodes CLIENT_SETUP. */
export function decodeClientSetup(body: Uint8Array, draft: IetfDraft): ClientSetup {
  const d = decoderFor(body, draft);
  if (draft >= 16) {
    return done(d, "CLIENT_SETUP", {
      versions: [IETF_VERSION[draft]],
      params: readParameters(d, draft),
    });
  }
  const n = d.u53("version count");
  if (n > MAX_VERSIONS) throw new DecodeError("invalid", `Cannot read ${n} versions`);
  const versions: number[] = [];
  for (let i = 0; i < n; i++) versions.push(d.u53("version"));
  return done(d, "CLIENT_SETUP", { versions, params: readParameters(d, draft) });
}

/** Encodes CLIENT_SETUP. */
export function encodeClientSetup(m: ClientSetup, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  if (draft < 16) {
    e.varint(m.versions.length);
    for (const v of m.versions) e.varint(v);
  }
  writeParameters(e, m.params, draft);
  return e.finish();
}

/** SERVER_SETUP: the chosen version and the server's parameters. */
export interface ServerSetup {
  /** The selected version. */
  readonly version: number;
  /** Setup parameters. */
  readonly params: Parameters;
}

/** Encodes SERVER_SETUP (from draft 15 the version is not repeated). */
export function encodeServerSetup(m: ServerSetup, draft: IetfDraft): Uint8Array {
  const e = encoderFor(draft);
  if (draft < 16) e.varint(m.version);
  writeParameters(e, m.params, draft);
  return e.finish();
}

/** Decodes SERVER_SETUP. */
export function decodeServerSetup(body: Uint8Array, draft: IetfDraft): ServerSetup {
  const d = decoderFor(body, draft);
  const version = draft >= 16 ? IETF_VERSION[draft] : d.u53("version");
  return done(d, "SERVER_SETUP", { version, params: readParameters(d, draft) });
}
