import { AuthError, type Grant, tokenFromUrl, type Verifier } from "../auth/mod.ts";
import { prefixCovers } from "../path/mod.ts";

/** What an admitted session may do. */
export interface Admission {
  /** The verified grant; undefined when auth is off (every action allowed). */
  readonly grant: Grant | undefined;
  /** The URL's path without outer slashes: where the client intends to work (checked at admission). */
  readonly root: string;
}

/** The session's root path (URL path without leading/trailing slashes). */
export function sessionRoot(url: URL | undefined): string {
  if (url === undefined) return "";
  let p: string;
  try {
    p = decodeURIComponent(url.pathname);
  } catch {
    throw new AuthError("malformed", "The session URL's path is not valid percent-encoding");
  }
  return p.replace(/^\/+|\/+$/g, "");
}

function reaches(grant: Grant, root: string): boolean {
  if (root === "") return grant.scopes.length > 0;
  if (
    grant.keyPrefix !== undefined && !prefixCovers(grant.keyPrefix, root) &&
    !prefixCovers(root, grant.keyPrefix)
  ) {
    return false;
  }
  return grant.scopes.some((s) => {
    if (!s.actions.includes("publish") && !s.actions.includes("subscribe")) return false;
    const b = "exact" in s.broadcast ? s.broadcast.exact : s.broadcast.prefix;
    return prefixCovers(root, b) || ("prefix" in s.broadcast && prefixCovers(b, root));
  });
}

/**
 * Admits a session by the `jwt` query parameter of its URL. Without a
 * verifier (no SLUICE_AUTH_KEYS) every session is admitted. Throws
 * AuthError: 401 for a missing or invalid credential, 403 for a valid one
 * that reaches nothing under the URL's path.
 */
export async function admitSession(
  url: URL | undefined,
  verifier: Verifier | undefined,
): Promise<Admission> {
  const root = sessionRoot(url);
  if (verifier === undefined) return { grant: undefined, root };
  const token = url === undefined ? undefined : tokenFromUrl(url);
  if (token === undefined) {
    throw new AuthError("missing", "The session URL carries no jwt query parameter");
  }
  const grant = await verifier.verify(token);
  if (!reaches(grant, root)) {
    throw new AuthError(
      "forbidden",
      `The credential allows neither publish nor subscribe under "/${root}"`,
    );
  }
  return { grant, root };
}

/** True when the admission allows `action` on the absolute `path` (and `track`). */
export function allowed(
  admission: Admission,
  action: "publish" | "subscribe",
  path: string,
  track?: string,
): boolean {
  return admission.grant === undefined || admission.grant.allows(action, path, track);
}
