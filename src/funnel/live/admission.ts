import { AuthError, type Grant, tokenFromUrl, type Verifier } from "../../auth/mod.ts";

/** What admission needs of a verifier: checking one credential. */
export type CredentialCheck = Pick<Verifier, "verify">;
import { originAllowed, type OriginPolicy } from "../../http/mod.ts";
import { VERSIONS } from "../../moq/mod.ts";
import {
  type Admission as WtAdmission,
  chooseProtocol,
  type WebTransportRequest,
} from "../../transport/webtransport/mod.ts";

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

/**
 * The own listener's WebTransport admission: a supported protocol, an
 * allowed Origin (CORS_ALLOWED_ORIGINS; unset allows only the listener's own
 * origin and clients that send none), then the credential — all before the
 * session is accepted.
 */
export function webTransportAdmission(
  cors: OriginPolicy,
  verifier: CredentialCheck | undefined,
): (request: WebTransportRequest) => Promise<WtAdmission> {
  return async (request) => {
    const protocol = chooseProtocol(request.protocols, VERSIONS);
    if (protocol === undefined) return { status: 400, reason: "No supported protocol offered" };
    const origin = request.origin;
    if (origin !== undefined && origin !== request.url.origin && !originAllowed(cors, origin)) {
      return { status: 403, reason: `Origin ${origin} is not allowed` };
    }
    try {
      await admitSubscriber(request.url, verifier);
    } catch (error) {
      if (error instanceof AuthError) {
        return { status: error.status, reason: error.message };
      }
      throw error;
    }
    return { status: 200, protocol };
  };
}
