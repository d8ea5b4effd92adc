/**
 * Refusals a feed can tell before it asks: its credential's own scopes,
 * read without verifying (the client holds no keys, and need not: a server
 * would refuse a forged token anyway). A scope check here can only agree
 * with the server or know less (a signing key's prefix is not in the
 * token), so a token it cannot read is left to the server.
 */
import { parseClaims, ScopedGrant } from "../auth/mod.ts";
import { RefusedError } from "./errors.ts";
import { jwtClaims } from "./token.ts";

/**
 * The refusal a subscription to `name` of `broadcast` with `token` would
 * meet, when the token's scopes do not allow `subscribe` there; undefined
 * when they do or when the token cannot be read.
 */
export function foreseeRefusal(
  token: string | undefined,
  broadcast: string,
  name: string,
): RefusedError | undefined {
  if (token === undefined) return undefined;
  let grant: ScopedGrant;
  try {
    const claims = parseClaims(jwtClaims(token));
    grant = new ScopedGrant(claims.scopes, claims.exp, claims.sub, undefined);
  } catch {
    return undefined; // not a credential this client can read: the server decides
  }
  if (grant.allows("subscribe", broadcast, name)) return undefined;
  const actions = [...new Set(grant.scopes.flatMap((s) => s.actions))].join(", ") || "nothing";
  return new RefusedError(
    "unauthorized",
    `The credential does not allow subscribing to "${name}" of "${broadcast}" (its scopes allow ${actions})`,
  );
}
