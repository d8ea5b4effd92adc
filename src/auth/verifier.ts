import { compactVerify, decodeProtectedHeader, errors as joseErrors } from "jose";
import { AuthError, ClaimsError } from "./errors.ts";
import { type CredentialClaims, parseClaims } from "./claims.ts";
import { type Grant, ScopedGrant } from "./grant.ts";
import type { VerificationKey } from "./key_set.ts";
import type { KeySource } from "./key_source.ts";
import { LruCache } from "../cache/mod.ts";

/** Clock leeway applied to `exp`, `nbf` and `iat`, in seconds. */
export const CLOCK_LEEWAY_SECONDS = 60;

/** Longest credential text accepted, in characters. */
export const MAX_TOKEN_LENGTH = 8192;

/** Options for `createVerifier`. */
export interface VerifierOptions {
  /** Current time in milliseconds since the epoch (default Date.now). */
  now?: () => number;
  /** Leeway for clock differences, in seconds (default 60). */
  leewaySeconds?: number;
  /** Verified credentials kept to skip signature checks (default 10000; 0 disables). */
  cacheSize?: number;
  /** When set, a credential must name it in `aud` (SLUICE_AUTH_AUDIENCE). */
  audience?: string;
  /** When set, a credential's `iss` must be it (SLUICE_AUTH_ISSUER). */
  issuer?: string;
}

/** Checks bearer credentials against a live key set. */
export interface Verifier {
  /** Where the keys come from. */
  readonly source: KeySource;
  /**
   * Verifies a compact JWT and returns what it grants; throws AuthError
   * (401) when it is missing, malformed, badly signed, expired, not yet
   * valid, or signed by a key not in the current set. Checks expiry and key
   * presence on every call, cached or not.
   */
  verify(token: string | undefined): Promise<Grant>;
  /** Stops the key source. */
  close(): void;
}

interface CacheEntry {
  readonly claims: CredentialClaims;
  key: VerificationKey;
  grant: Grant;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

class CachingVerifier implements Verifier {
  readonly source: KeySource;
  readonly #now: () => number;
  readonly #leeway: number;
  readonly #cache: LruCache<string, CacheEntry> | undefined;
  readonly #audience: string | undefined;
  readonly #issuer: string | undefined;

  constructor(source: KeySource, options: VerifierOptions) {
    this.source = source;
    this.#audience = options.audience;
    this.#issuer = options.issuer;
    this.#now = options.now ?? Date.now;
    this.#leeway = options.leewaySeconds ?? CLOCK_LEEWAY_SECONDS;
    const size = options.cacheSize ?? 10_000;
    this.#cache = size > 0 ? new LruCache(size) : undefined;
  }

  verify(token: string | undefined): Promise<Grant> {
    if (token === undefined || token === "") {
      return Promise.reject(new AuthError("missing", "No bearer credential was presented"));
    }
    const cached = this.#cache?.get(token);
    if (cached !== undefined) {
      try {
        return Promise.resolve(this.#recheck(token, cached));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#verifyFully(token);
  }

  /** The per-request checks a cached credential still needs: its key and its time window. */
  #recheck(token: string, entry: CacheEntry): Grant {
    const key = this.source.current().get(entry.key.kid);
    if (key === undefined) {
      this.#cache?.delete(token);
      throw new AuthError("unknown_key", "The credential's signing key is no longer trusted");
    }
    if (key !== entry.key) {
      // The set was reloaded; same kid means same key material, but the prefix may differ.
      if (key.prefix !== entry.key.prefix) entry.grant = grantFor(entry.claims, key);
      entry.key = key;
    }
    this.#checkTime(entry.claims);
    return entry.grant;
  }

  async #verifyFully(token: string): Promise<Grant> {
    if (token.length > MAX_TOKEN_LENGTH || !JWT_SHAPE.test(token)) {
      throw new AuthError("malformed", "The credential is not a compact JWT");
    }
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw new AuthError("malformed", "The credential's header is not valid JSON");
    }
    if (header.alg !== "EdDSA") {
      throw new AuthError(
        "malformed",
        `The credential's algorithm ${JSON.stringify(header.alg)} is not accepted (only EdDSA)`,
      );
    }
    if ("crit" in header) {
      throw new AuthError("malformed", 'The credential\'s header has "crit", which is refused');
    }
    if (typeof header.kid !== "string" || header.kid === "") {
      throw new AuthError("malformed", 'The credential\'s header names no key ("kid")');
    }
    const key = this.source.current().get(header.kid);
    if (key === undefined) {
      throw new AuthError("unknown_key", "The credential is signed by a key that is not trusted");
    }
    let payload: Uint8Array;
    try {
      ({ payload } = await compactVerify(token, key.key, { algorithms: ["EdDSA"] }));
    } catch (error) {
      if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
        throw new AuthError("bad_signature", "The credential's signature does not verify");
      }
      throw new AuthError("malformed", "The credential cannot be read", { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
    } catch {
      // Only the signed payload's bytes are read here: not UTF-8 or not JSON.
      throw new AuthError("bad_claims", "The credential is refused: Claims are not JSON");
    }
    let claims: CredentialClaims;
    try {
      claims = parseClaims(json);
    } catch (error) {
      // Refused by our class alone: anything else thrown here is a bug, answered 500.
      if (!(error instanceof ClaimsError)) throw error;
      throw new AuthError("bad_claims", `The credential is refused: ${error.message}`);
    }
    this.#checkTime(claims);
    this.#checkParties(claims);
    // The set may have changed while the signature was checked.
    const current = this.source.current().get(key.kid);
    if (current === undefined) {
      throw new AuthError("unknown_key", "The credential's signing key is no longer trusted");
    }
    const grant = grantFor(claims, current);
    this.#cache?.set(token, { claims, key: current, grant });
    return grant;
  }

  // A credential minted for another service, or by another issuer, is not accepted here.
  #checkParties(claims: CredentialClaims): void {
    if (this.#audience !== undefined && !(claims.aud ?? []).includes(this.#audience)) {
      throw new AuthError(
        "bad_claims",
        `The credential is not meant for "${this.#audience}" (aud)`,
      );
    }
    if (this.#issuer !== undefined && claims.iss !== this.#issuer) {
      throw new AuthError("bad_claims", `The credential was not issued by "${this.#issuer}" (iss)`);
    }
  }

  #checkTime(claims: CredentialClaims): void {
    const now = Math.floor(this.#now() / 1000);
    if (now >= claims.exp + this.#leeway) {
      throw new AuthError("expired", "The credential has expired");
    }
    if (now < claims.nbf - this.#leeway || now < claims.iat - this.#leeway) {
      throw new AuthError("not_yet_valid", "The credential is not valid yet");
    }
  }

  close(): void {
    this.source.close();
    this.#cache?.clear();
  }
}

function grantFor(claims: CredentialClaims, key: VerificationKey): Grant {
  return new ScopedGrant(claims.scopes, claims.exp, claims.sub, key.prefix);
}

/**
 * Starts `source` and returns a verifier over it; rejects when the source
 * cannot give a first key set.
 *
 * @example
 * ```ts
 * const verifier = await createVerifier(keySourceFrom("keys.json"));
 * const grant = await verifier.verify(extractBearer(request.headers.get("authorization")));
 * if (!grant.allows("post", "room/1", "chat")) throw new AuthError("forbidden", "...");
 * ```
 */
export async function createVerifier(
  source: KeySource,
  options: VerifierOptions = {},
): Promise<Verifier> {
  await source.start();
  return new CachingVerifier(source, options);
}
