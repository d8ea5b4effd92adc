import { AuthError, type Grant, tokenFromUrl, type Verifier } from "../../../auth/mod.ts";

/** What admission needs of a verifier: checking one credential. */
export type CredentialCheck = Pick<Verifier, "verify">;

/**
 * Admits a subscriber session by the `jwt` query parameter of its URL.
 * Without a verifier every session is admitted (grant undefined). Throws
 * AuthError: 401 for a missing or invalid credential, 403 for one that
 * grants neither fetch nor subscribe anywhere.
 */
export async function admitSubscriber(
  url: URL | undefined,
  verifier: CredentialCheck | undefined,
): Promise<Grant | undefined> {
  if (verifier === undefined) return undefined;
  const token = url === undefined ? undefined : tokenFromUrl(url);
  if (token === undefined) {
    throw new AuthError("missing", "The session URL carries no jwt query parameter");
  }
  const grant = await verifier.verify(token);
  const reads = grant.scopes.some((s) =>
    s.actions.includes("fetch") || s.actions.includes("subscribe")
  );
  if (!reads) {
    throw new AuthError("forbidden", "The credential grants neither fetch nor subscribe");
  }
  return grant;
}

/** True when `grant` (undefined: auth off) lets a subscriber read `broadcast` (and `track`). */
export function mayRead(grant: Grant | undefined, broadcast: string, track?: string): boolean {
  if (grant === undefined) return true;
  return grant.allows("subscribe", broadcast, track) || grant.allows("fetch", broadcast, track);
}
