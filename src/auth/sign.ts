import { importJWK, SignJWT } from "jose";
import { MAX_LIFETIME_SECONDS, parseClaims } from "./claims.ts";
import { ed25519Thumbprint } from "./key_set.ts";
import { pathProblem } from "../path/mod.ts";
import type { PathAuth, Scope } from "./scope.ts";

/** What a new credential grants; `scopes` or `path_auth`, not both. */
export interface TokenClaims {
  /** The sender name records posted with it carry. */
  sub?: string;
  /** What it grants. */
  scopes?: readonly Scope[];
  /** Older-style grant (publish at root/pub, read at root/sub). */
  path_auth?: PathAuth;
  /** Credential identifier. */
  jti?: string;
  /** Audience: the service (or services) meant to accept it (`aud`). */
  aud?: string | string[];
  /** Issuer: who minted it (`iss`). */
  iss?: string;
}

/** Options for signing. */
export interface SignOptions {
  /** Lifetime in seconds, 1..3600 (default 3600). */
  ttlSeconds?: number;
  /** Current time in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

/** A private Ed25519 key ready to sign credentials. */
export interface Signer {
  /** The key's RFC 7638 thumbprint, written as the credential's `kid`. */
  readonly kid: string;
  /** The prefix recorded with the key at keygen, when there is one. */
  readonly prefix?: string;
  /** Signs a credential granting `claims`; throws `ClaimsError` on bad claims, RangeError on a bad TTL. */
  sign(claims: TokenClaims, options?: SignOptions): Promise<string>;
}

/**
 * Imports a private Ed25519 JWK (as `sluice auth keygen` writes it); throws
 * TypeError when it is not one or its `kid` is not its thumbprint.
 */
export async function createSigner(privateJwk: JsonWebKey | unknown): Promise<Signer> {
  if (typeof privateJwk !== "object" || privateJwk === null) {
    throw new TypeError("Signing key is not a JSON object");
  }
  const jwk = privateJwk as Record<string, unknown>;
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519") {
    throw new TypeError("Signing key is not an Ed25519 key (kty OKP, crv Ed25519)");
  }
  if (typeof jwk.d !== "string" || typeof jwk.x !== "string") {
    throw new TypeError('Signing key is not a private key (needs "d" and "x")');
  }
  const kid = await ed25519Thumbprint(jwk.x);
  if (jwk.kid !== undefined && jwk.kid !== kid) {
    throw new TypeError(`Signing key's kid ${JSON.stringify(jwk.kid)} is not its thumbprint`);
  }
  let prefix: string | undefined;
  if (typeof jwk.prefix === "string" && jwk.prefix !== "") {
    const problem = pathProblem(jwk.prefix, true);
    if (problem !== undefined) {
      throw new TypeError(`Signing key's prefix "${jwk.prefix}" ${problem}`);
    }
    prefix = jwk.prefix;
  }
  let key: CryptoKey | Uint8Array;
  try {
    key = await importJWK({ kty: "OKP", crv: "Ed25519", x: jwk.x, d: jwk.d }, "EdDSA");
  } catch (error) {
    throw new TypeError(`Signing key cannot be imported: ${(error as Error).message}`);
  }
  const signer: Signer = {
    kid,
    async sign(claims: TokenClaims, options: SignOptions = {}): Promise<string> {
      const ttl = options.ttlSeconds ?? MAX_LIFETIME_SECONDS;
      if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_LIFETIME_SECONDS) {
        throw new RangeError(
          `Credential lifetime ${ttl} s is not within 1..${MAX_LIFETIME_SECONDS}`,
        );
      }
      const now = Math.floor((options.now ?? Date.now)() / 1000);
      const payload: Record<string, unknown> = {};
      if (claims.sub !== undefined) payload.sub = claims.sub;
      if (claims.scopes !== undefined) payload.scopes = claims.scopes;
      if (claims.path_auth !== undefined) payload.path_auth = claims.path_auth;
      if (claims.jti !== undefined) payload.jti = claims.jti;
      if (claims.aud !== undefined) payload.aud = claims.aud;
      if (claims.iss !== undefined) payload.iss = claims.iss;
      payload.iat = now;
      payload.nbf = now;
      payload.exp = now + ttl;
      // Refuse to sign what a verifier would refuse.
      parseClaims(JSON.parse(JSON.stringify(payload)));
      return await new SignJWT(payload)
        .setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid })
        .sign(key);
    },
  };
  return prefix === undefined ? signer : Object.assign(signer, { prefix });
}

/** Signs one credential with a private JWK; see `createSigner` to sign many. */
export async function signToken(
  privateJwk: JsonWebKey | unknown,
  claims: TokenClaims,
  options: SignOptions = {},
): Promise<string> {
  return await (await createSigner(privateJwk)).sign(claims, options);
}

/** Reads a private JWK file (RELAY_SIGNING_KEY) and returns a signer for it. */
export async function readSigner(path: string): Promise<Signer> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(`Cannot read signing key ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    throw new SyntaxError(`Signing key ${path} is not JSON`);
  }
  try {
    return await createSigner(jwk);
  } catch (error) {
    throw new TypeError(`Signing key ${path}: ${(error as Error).message}`);
  }
}
