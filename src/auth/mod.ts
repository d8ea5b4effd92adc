/**
 * Credentials: EdDSA (Ed25519) JWTs verified against a JWK Set read from a
 * file or an https URL, scopes and `path_auth` turned into grants, signing,
 * and the `sluice auth` commands.
 *
 * @example
 * ```ts
 * import { createVerifier, extractBearer, keySourceFrom, requireAllowed } from "./mod.ts";
 *
 * const verifier = await createVerifier(keySourceFrom("keys.json"));
 * const grant = await verifier.verify(extractBearer(request.headers.get("authorization")));
 * requireAllowed(grant, "post", "room/1", "chat"); // throws AuthError(403) otherwise
 * ```
 *
 * Choices where the spec leaves room (decisions.md is the rule otherwise):
 * - Paths in scopes, `path_auth` and key prefixes are written without a
 *   leading slash; a leading or trailing slash, an empty, `.` or `..` segment
 *   or a control character is refused (which refuses the whole credential),
 *   never normalised.
 * - A key's `prefix` intersects with every scope: a scope reaching outside it
 *   grants nothing there. `""` as a key prefix confines nothing.
 * - Credentials must name their key with `kid` (the RFC 7638 thumbprint).
 *   Headers may carry `typ`; `crit` is refused. `exp > iat`, `nbf < exp`, and
 *   `iat`/`nbf` more than the leeway in the future are refused. An empty
 *   `scopes` array is valid and grants nothing; a scope with no actions is
 *   malformed. `sub` must be a non-empty string when present.
 * - A key set with any bad key, a `kid` that is not the thumbprint, or any
 *   private member is refused whole; the last good set stays in force. A file
 *   source re-reads the file every second and compares its text (mtime misses
 *   quick successive writes); a URL source polls every 30 s.
 * - `allows(action, broadcast)` without a track asks whether some track of the
 *   broadcast is reachable (what announcing it needs).
 *
 * @module
 */
export { AuthError, type AuthErrorCode, ClaimsError } from "./errors.ts";
export {
  type Action,
  ACTIONS,
  type BroadcastMatch,
  parsePathAuth,
  parseScope,
  type PathAuth,
  pathAuthScopes,
  type Scope,
} from "./scope.ts";
export { type CredentialClaims, MAX_LIFETIME_SECONDS, parseClaims } from "./claims.ts";
export { type Grant, ScopedGrant, unrestrictedGrant } from "./grant.ts";
export { requireAllowed } from "./authorize.ts";
export { prefixCovers } from "../path/mod.ts";
export { MemoryKeySource } from "./memory_key_source.ts";
export {
  ed25519Thumbprint,
  KeySet,
  parseKeySet,
  parseVerificationKey,
  type VerificationKey,
} from "./key_set.ts";
export { type KeySource, PollingKeySource, type PollOptions, type Timers } from "./key_source.ts";
export { FileKeySource, type FileKeySourceOptions } from "./file_key_source.ts";
export {
  MAX_KEY_SET_REDIRECTS,
  MAX_KEY_SET_STALENESS_MS,
  UrlKeySource,
  type UrlKeySourceOptions,
} from "./url_key_source.ts";
export { keySourceFrom, type KeySourceOptions } from "./key_source_from.ts";
export {
  CLOCK_LEEWAY_SECONDS,
  createVerifier,
  MAX_TOKEN_LENGTH,
  type Verifier,
  type VerifierOptions,
} from "./verifier.ts";
export { extractBearer, tokenFromUrl } from "./bearer.ts";
export { bearerChallenge, type BearerChallengeOptions } from "./challenge.ts";
export {
  createSigner,
  readSigner,
  type Signer,
  type SignOptions,
  signToken,
  type TokenClaims,
} from "./sign.ts";
export { type AuthCommandIo, runAuthCommand } from "./command.ts";
