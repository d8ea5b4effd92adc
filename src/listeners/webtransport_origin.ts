import { AuthError } from "../auth/mod.ts";
import { type Admission, chooseProtocol, type WebTransportRequest } from "../transport/mod.ts";
import { originAllowed, type OriginPolicy } from "../http/mod.ts";

/** Options of {@link webTransportAdmission}. */
export interface WebTransportAdmissionOptions {
  /** The protocols served, most preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** CORS_ALLOWED_ORIGINS: browser origins allowed besides the server's own. */
  readonly origins: OriginPolicy;
  /** Checks the session URL's credential; an `AuthError` refuses the session. */
  readonly admitCredential: (url: URL) => Promise<unknown>;
}

/**
 * The WebTransport admission of a MoQ server, decided before a session is
 * accepted: a supported protocol (else 400), then the Origin — absent (not
 * a browser), the server's own, or allowed by the policy (else 403) — then
 * the credential, whose `AuthError` becomes its status (401 or 403).
 *
 * @example
 * ```ts
 * const admit = webTransportAdmission({
 *   protocols: VERSIONS,
 *   origins: SAME_ORIGIN_ONLY,
 *   admitCredential: (url) => admitSession(url, verifier),
 * });
 * ```
 */
export function webTransportAdmission(
  options: WebTransportAdmissionOptions,
): (request: WebTransportRequest) => Promise<Admission> {
  const { protocols, origins, admitCredential } = options;
  return async (request) => {
    const protocol = chooseProtocol(request.protocols, protocols);
    if (protocol === undefined) return { status: 400, reason: "No supported protocol offered" };
    const origin = request.origin;
    if (origin !== undefined && origin !== request.url.origin && !originAllowed(origins, origin)) {
      return { status: 403, reason: `Origin ${origin} is not allowed` };
    }
    try {
      await admitCredential(request.url);
    } catch (error) {
      if (error instanceof AuthError) return { status: error.status, reason: error.message };
      throw error;
    }
    return { status: 200, protocol };
  };
}
