import { AuthError, type Grant, tokenFromUrl, type Verifier } from "../../auth/mod.ts";
import { prefixCovers } from "../../path/mod.ts";

/** The URL query parameter with which a relay's session says it is a peer (its value: the relay's name). */
export const PEER_PARAMETER = "peer";

/** What an admitted session may do. */
export interface Admission {
  /** The verified grant; undefined when auth is off (every action allowed). */
  readonly grant: Grant | undefined;
  /** The credential the grant was verified from (checked again when the key set changes). */
  readonly token?: string;
  /** The URL's path without outer slashes: where the client intends to work (checked at admission). */
  readonly root: string;
  /**
   * True for another relay of the mesh (class "peer"): its credential has a
   * `peer` scope, or, with auth off, its URL says so.
   */
  readonly peer: boolean;
}

function grantsPeering(grant: Grant): boolean {
  return grant.scopes.some((s) => s.actions.includes("peer"));
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
    if (!s.actions.some((a) => a === "publish" || a === "subscribe" || a === "peer")) return false;
    const b = "exact" in s.broadcast ? s.broadcast.exact : s.broadcast.prefix;
    return prefixCovers(root, b) || ("prefix" in s.broadcast && prefixCovers(b, root));
  });
}

/**
 * Admits a session by the `jwt` query parameter of its URL. Without a
 * verifier (no SLUICE_AUTH_KEYS) every session is admitted, and one whose
 * URL has the `peer` parameter is a peer. Throws AuthError: 401 for a
 * missing or invalid credential, 403 for a valid one that reaches nothing
 * under the URL's path or that says it is a peer without a `peer` scope.
 */
export async function admitSession(
  url: URL | undefined,
  verifier: Verifier | undefined,
): Promise<Admission> {
  const root = sessionRoot(url);
  // Not `url.searchParams`: the session's URL would keep it (see tokenFromUrl).
  const claimsPeer = url !== undefined && new URLSearchParams(url.search).has(PEER_PARAMETER);
  if (verifier === undefined) return { grant: undefined, root, peer: claimsPeer };
  const token = url === undefined ? undefined : tokenFromUrl(url);
  if (token === undefined) {
    throw new AuthError("missing", "The session URL carries no jwt query parameter");
  }
  const grant = await verifier.verify(token);
  const peer = grantsPeering(grant);
  if (claimsPeer && !peer) {
    throw new AuthError(
      "forbidden",
      "The session says it is a peer but its credential has no peer scope",
    );
  }
  if (!reaches(grant, root)) {
    throw new AuthError(
      "forbidden",
      `The credential allows neither publish nor subscribe under "/${root}"`,
    );
  }
  return { grant, root, peer, token };
}

/**
 * True when the admission allows `action` on the absolute `path` (and
 * `track`); a peer's `peer` scope allows both actions on its broadcasts.
 */
export function allowed(
  admission: Admission,
  action: "publish" | "subscribe",
  path: string,
  track?: string,
): boolean {
  const grant = admission.grant;
  if (grant === undefined) return true;
  return grant.allows(action, path, track) || (admission.peer && grant.allows("peer", path, track));
}

/** What the relay grants a session it dialed itself (a configured peer): everything. */
export const DIALED_PEER: Admission = { grant: undefined, root: "", peer: true };

/** The host of a session's `host:port` address, IPv4-mapped IPv6 as plain IPv4. */
function remoteHost(remote: string): string {
  const host = remote.replace(/:\d+$/, "").replace(/^\[|\]$/g, "").toLowerCase();
  return host.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1");
}

/**
 * Who a publisher connected here is, for route ownership: its credential's
 * `sub`; without one, its key prefix and publish scopes; with auth off, its
 * IP address (a restarted publisher on the same host is the same identity).
 * Undefined for a peer relay, whose routes are owned where they start: one
 * this relay dialed, or one whose credential has a `peer` scope. With auth
 * off, a session that dialed in saying it is a peer proves nothing, so it is
 * a publisher like any other (by its address).
 */
export function publisherIdentity(
  admission: Admission,
  remote: string,
  dialed: boolean,
): string | undefined {
  if (admission.peer && (dialed || admission.grant !== undefined)) return undefined;
  const grant = admission.grant;
  if (grant === undefined) return `address:${remoteHost(remote)}`;
  if (grant.sub !== undefined) return `sub:${grant.sub}`;
  const scopes = grant.scopes.filter((s) => s.actions.includes("publish"))
    .map((s) => JSON.stringify(s.broadcast)).sort();
  return `scopes:${grant.keyPrefix ?? ""}:${scopes.join(",")}`;
}

// A credential that cannot publish never yields a route: that session is not asked for
// announcements (each open control stream holds a read buffer in the transport).
export function mayPublish(admission: Admission): boolean {
  return admission.grant === undefined || admission.peer ||
    admission.grant.scopes.some((sc) => sc.actions.includes("publish"));
}
