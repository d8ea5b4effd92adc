// Credentials for every test that signs or verifies them (auth, funnel, relay,
// client): real Ed25519 keys and hand-built JWTs.
import { base64url, exportJWK, generateKeyPair } from "jose";
import { ed25519Thumbprint, type KeySet, parseKeySet } from "../../src/auth/mod.ts";

/** A fixed "now" for tests, in milliseconds. */
export const NOW_MS = 1_800_000_000_000;
/** The same instant in seconds. */
export const NOW = NOW_MS / 1000;

/** A generated key pair with its JWKs. */
export interface TestKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly privateJwk: Record<string, string>;
  readonly publicJwk: Record<string, string>;
}

/** Generates a real Ed25519 key, optionally confined to `prefix`. */
export async function makeKey(prefix?: string): Promise<TestKey> {
  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await ed25519Thumbprint(jwk.x!);
  const publicJwk: Record<string, string> = { kty: "OKP", crv: "Ed25519", x: jwk.x!, kid };
  const privateJwk: Record<string, string> = { ...publicJwk, d: jwk.d! };
  if (prefix !== undefined) {
    publicJwk.prefix = prefix;
    privateJwk.prefix = prefix;
  }
  return { kid, privateKey: privateKey as CryptoKey, privateJwk, publicJwk };
}

/** The JWK Set document holding the public halves of `keys`. */
export function keySetText(...keys: TestKey[]): string {
  return JSON.stringify({ keys: keys.map((key) => key.publicJwk) });
}

/** A parsed key set of `keys`. */
export function keySetOf(...keys: TestKey[]): Promise<KeySet> {
  return parseKeySet(keySetText(...keys));
}

const encoder = new TextEncoder();

function part(value: unknown): string {
  return base64url.encode(encoder.encode(JSON.stringify(value)));
}

/** Builds a compact JWS of `header` and `payload` signed by `sign` over the signing input. */
export async function compact(
  header: Record<string, unknown>,
  payload: unknown,
  sign: (input: Uint8Array) => Promise<ArrayBuffer>,
): Promise<string> {
  const input = `${part(header)}.${part(payload)}`;
  const signature = new Uint8Array(await sign(encoder.encode(input)));
  return `${input}.${base64url.encode(signature)}`;
}

/** Signs `payload` with `key` as EdDSA, with `header` members added to alg and kid. */
export function signWith(
  key: TestKey,
  payload: unknown,
  header: Record<string, unknown> = {},
): Promise<string> {
  return compact(
    { alg: "EdDSA", kid: key.kid, ...header },
    payload,
    (input) => crypto.subtle.sign("Ed25519", key.privateKey, input as BufferSource),
  );
}

/** Valid claims issued at NOW lasting an hour, with `extra` merged in (undefined removes). */
export function claims(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    sub: "alice",
    scopes: [{ actions: ["post", "fetch"], broadcast: { prefix: "room" } }],
    iat: NOW,
    nbf: NOW,
    exp: NOW + 3600,
    ...extra,
  };
  for (const [name, value] of Object.entries(base)) if (value === undefined) delete base[name];
  return base;
}
