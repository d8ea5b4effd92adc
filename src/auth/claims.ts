import { ClaimsError } from "./errors.ts";
import { parsePathAuth, parseScope, type PathAuth, pathAuthScopes, type Scope } from "./scope.ts";

/** Longest credential lifetime (`exp - iat`) accepted, in seconds. */
export const MAX_LIFETIME_SECONDS = 3600;

/** The claims of a credential once read and checked for shape. */
export interface CredentialClaims {
  /** Sender name, when the credential has one. */
  readonly sub?: string;
  /** What the credential grants (`path_auth` already turned into scopes). */
  readonly scopes: readonly Scope[];
  /** The `path_auth` claim as written, when the credential used it. */
  readonly pathAuth?: PathAuth;
  /** Issue time, seconds since the epoch. */
  readonly iat: number;
  /** Not-before time, seconds since the epoch. */
  readonly nbf: number;
  /** Expiry time, seconds since the epoch. */
  readonly exp: number;
  /** Credential identifier, when given. */
  readonly jti?: string;
  /** Audiences (`aud`, a string or an array of them), when given. */
  readonly aud?: readonly string[];
  /** Issuer (`iss`), when given. */
  readonly iss?: string;
}

const KNOWN = ["sub", "scopes", "path_auth", "iat", "nbf", "exp", "jti", "aud", "iss"];

function audiences(value: unknown): string[] {
  const list = typeof value === "string" ? [value] : value;
  if (
    !Array.isArray(list) || list.length === 0 ||
    !list.every((a) => typeof a === "string" && a !== "")
  ) {
    throw new ClaimsError('Claim "aud" is neither a non-empty string nor an array of them');
  }
  return list as string[];
}

function seconds(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ClaimsError(`Claim "${name}" is not a non-negative integer number of seconds`);
  }
  return value;
}

/**
 * Reads a credential's claims from untrusted JSON; throws `ClaimsError` naming
 * the first thing wrong. Unknown claims, both or neither of `scopes` and
 * `path_auth`, a malformed scope, or a lifetime over one hour refuse the
 * whole credential. Time against a clock is checked elsewhere.
 */
export function parseClaims(payload: unknown): CredentialClaims {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new ClaimsError("Claims are not a JSON object");
  }
  const claims = payload as Record<string, unknown>;
  for (const key of Object.keys(claims)) {
    if (!KNOWN.includes(key)) throw new ClaimsError(`Unknown claim "${key}"`);
  }
  const iat = seconds(claims.iat, "iat");
  const nbf = seconds(claims.nbf, "nbf");
  const exp = seconds(claims.exp, "exp");
  if (exp <= iat) throw new ClaimsError(`Claim "exp" (${exp}) is not after "iat" (${iat})`);
  if (exp - iat > MAX_LIFETIME_SECONDS) {
    throw new ClaimsError(
      `Credential lifetime ${exp - iat} s is over the ${MAX_LIFETIME_SECONDS} s maximum`,
    );
  }
  if (nbf >= exp) throw new ClaimsError(`Claim "nbf" (${nbf}) is not before "exp" (${exp})`);
  const hasScopes = claims.scopes !== undefined;
  const hasPathAuth = claims.path_auth !== undefined;
  if (hasScopes && hasPathAuth) {
    throw new ClaimsError('Claims "scopes" and "path_auth" are both present; use one');
  }
  if (!hasScopes && !hasPathAuth) {
    throw new ClaimsError('Claim "scopes" (or "path_auth") is missing');
  }
  let scopes: Scope[];
  let pathAuth: PathAuth | undefined;
  if (hasScopes) {
    if (!Array.isArray(claims.scopes)) throw new ClaimsError('Claim "scopes" is not an array');
    scopes = claims.scopes.map((scope, index) => parseScope(scope, `scopes[${index}]`));
  } else {
    pathAuth = parsePathAuth(claims.path_auth);
    scopes = pathAuthScopes(pathAuth);
  }
  const result: {
    sub?: string;
    scopes: Scope[];
    pathAuth?: PathAuth;
    iat: number;
    nbf: number;
    exp: number;
    jti?: string;
    aud?: string[];
    iss?: string;
  } = { scopes, iat, nbf, exp };
  if (claims.aud !== undefined) result.aud = audiences(claims.aud);
  if (claims.iss !== undefined) {
    if (typeof claims.iss !== "string" || claims.iss === "") {
      throw new ClaimsError('Claim "iss" is not a non-empty string');
    }
    result.iss = claims.iss;
  }
  if (claims.sub !== undefined) {
    if (typeof claims.sub !== "string" || claims.sub === "") {
      throw new ClaimsError('Claim "sub" is not a non-empty string');
    }
    result.sub = claims.sub;
  }
  if (claims.jti !== undefined) {
    if (typeof claims.jti !== "string") throw new ClaimsError('Claim "jti" is not a string');
    result.jti = claims.jti;
  }
  if (pathAuth !== undefined) result.pathAuth = pathAuth;
  return result;
}
