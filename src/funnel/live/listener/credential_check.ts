import { AuthError, type Grant, tokenFromUrl, type Verifier } from "../../../auth/mod.ts";

/** What admission needs of a verifier: checking one credential. */
export type CredentialCheck = Pick<Verifier, "verify">;

/** An admitted subscriber's credential: what it granted, and how to ask again. */
export interface SubscriberCredential {
  /** The grant at admission; undefined when auth is off. */
  readonly grant: Grant | undefined;
  /**
   * Checks the credential again, as every request does: resolves to its
   * grant now (undefined when auth is off); throws AuthError once it has
   * expired (past the leeway) or its key has left the key set.
   */
  recheck(): Promise<Grant | undefined>;
}

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
  return (await admitCredential(url, verifier)).grant;
}

/** {@linkcode admitSubscriber}, keeping the credential so each later request checks it again. */
export async function admitCredential(
  url: URL | undefined,
  verifier: CredentialCheck | undefined,
): Promise<SubscriberCredential> {
  if (verifier === undefined) {
    return { grant: undefined, recheck: () => Promise.resolve(undefined) };
  }
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
  return { grant, recheck: () => verifier.verify(token) };
}

/** True when `grant` (undefined: auth off) lets a subscriber read `broadcast` (and `track`). */
export function mayRead(grant: Grant | undefined, broadcast: string, track?: string): boolean {
  if (grant === undefined) return true;
  return grant.allows("subscribe", broadcast, track) || grant.allows("fetch", broadcast, track);
}
