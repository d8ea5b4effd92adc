import { base64url, calculateJwkThumbprint, importJWK } from "jose";
import { pathProblem } from "../path/mod.ts";

/** A public Ed25519 key from a key set, ready to verify with. */
export interface VerificationKey {
  /** RFC 7638 thumbprint of the key; credentials name it in their header. */
  readonly kid: string;
  /** Confines every path a credential signed with this key may grant; absent confines nothing. */
  readonly prefix?: string;
  /** The public key, base64url, as in the JWK. */
  readonly x: string;
  /** The imported key. */
  readonly key: CryptoKey;
}

/** Largest key-set document accepted, in bytes. */
export const MAX_KEY_SET_BYTES = 1 << 20;

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

/** An immutable set of verification keys by kid. */
export class KeySet {
  readonly #keys: ReadonlyMap<string, VerificationKey>;

  /** Wraps keys already checked; kids must be distinct. */
  constructor(keys: Iterable<VerificationKey>) {
    const map = new Map<string, VerificationKey>();
    for (const key of keys) {
      if (map.has(key.kid)) throw new TypeError(`Key set has key "${key.kid}" twice`);
      map.set(key.kid, key);
    }
    this.#keys = map;
  }

  /** The key named `kid`, if the set holds it. */
  get(kid: string): VerificationKey | undefined {
    return this.#keys.get(kid);
  }

  /** How many keys the set holds. */
  get size(): number {
    return this.#keys.size;
  }

  /** The keys, in the order the set listed them. */
  keys(): IterableIterator<VerificationKey> {
    return this.#keys.values();
  }

  /** The set as a public JWK Set document. */
  toJSON(): { keys: Record<string, string>[] } {
    return {
      keys: [...this.#keys.values()].map((key) => {
        const jwk: Record<string, string> = { kty: "OKP", crv: "Ed25519", x: key.x, kid: key.kid };
        if (key.prefix !== undefined) jwk.prefix = key.prefix;
        return jwk;
      }),
    };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Computes the RFC 7638 thumbprint (SHA-256, base64url) of an Ed25519 public key. */
export function ed25519Thumbprint(x: string): Promise<string> {
  return calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x }, "sha256");
}

/**
 * Checks one public JWK from a key set and imports it; throws TypeError
 * naming what is wrong (a private member, another key type, a kid that is
 * not the thumbprint, a bad prefix).
 */
export async function parseVerificationKey(
  value: unknown,
  where = "key",
): Promise<VerificationKey> {
  if (!isRecord(value)) throw new TypeError(`${where} is not an object`);
  for (const member of PRIVATE_MEMBERS) {
    if (member in value) {
      throw new TypeError(
        `${where} holds the private member "${member}"; publish public keys only`,
      );
    }
  }
  if (value.kty !== "OKP" || value.crv !== "Ed25519") {
    throw new TypeError(
      `${where} is not an Ed25519 key (kty ${JSON.stringify(value.kty)}, crv ${
        JSON.stringify(value.crv)
      })`,
    );
  }
  if (value.alg !== undefined && value.alg !== "EdDSA" && value.alg !== "Ed25519") {
    throw new TypeError(`${where} has alg ${JSON.stringify(value.alg)}; expected "EdDSA"`);
  }
  if (value.use !== undefined && value.use !== "sig") {
    throw new TypeError(`${where} has use ${JSON.stringify(value.use)}; expected "sig"`);
  }
  if (
    value.key_ops !== undefined &&
    (!Array.isArray(value.key_ops) || !value.key_ops.includes("verify"))
  ) {
    throw new TypeError(`${where} has key_ops without "verify"`);
  }
  const x = value.x;
  let raw: Uint8Array;
  try {
    if (typeof x !== "string") throw new TypeError("not a string");
    raw = base64url.decode(x);
  } catch {
    throw new TypeError(`${where}.x is not base64url text`);
  }
  if (raw.length !== 32) throw new TypeError(`${where}.x is ${raw.length} bytes, not 32`);
  const thumbprint = await ed25519Thumbprint(x as string);
  if (value.kid !== undefined && value.kid !== thumbprint) {
    throw new TypeError(
      `${where}.kid ${
        JSON.stringify(value.kid)
      } is not the key's RFC 7638 thumbprint "${thumbprint}"`,
    );
  }
  let prefix: string | undefined;
  if (value.prefix !== undefined) {
    if (typeof value.prefix !== "string") throw new TypeError(`${where}.prefix is not a string`);
    const problem = pathProblem(value.prefix, true);
    if (problem !== undefined) throw new TypeError(`${where}.prefix "${value.prefix}" ${problem}`);
    if (value.prefix !== "") prefix = value.prefix;
  }
  const key = await importJWK({ kty: "OKP", crv: "Ed25519", x: x as string }, "EdDSA");
  if (!(key instanceof CryptoKey)) throw new TypeError(`${where} did not import as a public key`);
  return prefix === undefined ? { kid: thumbprint, x: x as string, key } : {
    kid: thumbprint,
    x: x as string,
    key,
    prefix,
  };
}

/**
 * Reads a JWK Set document of public Ed25519 keys. Throws SyntaxError when
 * the text is not JSON and TypeError when any key is unacceptable: one bad
 * key (or any private member) refuses the whole set.
 */
export async function parseKeySet(text: string): Promise<KeySet> {
  if (text.length > MAX_KEY_SET_BYTES) {
    throw new RangeError(`Key set is larger than ${MAX_KEY_SET_BYTES} bytes`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new SyntaxError(`Key set is not JSON: ${(error as Error).message}`);
  }
  if (!isRecord(document) || !Array.isArray(document.keys)) {
    throw new TypeError('Key set is not a JWK Set (an object with a "keys" array)');
  }
  const keys: VerificationKey[] = [];
  for (const [index, value] of document.keys.entries()) {
    keys.push(await parseVerificationKey(value, `keys[${index}]`));
  }
  return new KeySet(keys);
}
