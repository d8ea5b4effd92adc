/**
 * Where a GOAWAY sends a session: the URI it names, if it is one a client
 * can dial. A sluice relay names a `moqt:` (native QUIC), `https:`
 * (WebTransport) or `wss:` (QMux over WebSocket) URL (GOAWAY_REDIRECT_URI);
 * the funnel's relay client and the application client follow all three.
 */

import { GOAWAY_SCHEMES } from "../config/mod.ts";

/** The URL schemes a GOAWAY redirect may name: those a relay's GOAWAY_REDIRECT_URI takes. */
export { GOAWAY_SCHEMES };

/**
 * The URL a GOAWAY's `uri` names, resolved against the session's `current`
 * URL; undefined when it names none ("") or none to follow (not a URL, or a
 * scheme outside {@linkcode GOAWAY_SCHEMES}: a plain `ws:` redirect would
 * send the credential in clear).
 *
 * @example
 * ```ts
 * goawayRedirect("wss://b.example:4433/", new URL("moqt://a.example:4433/"))?.href;
 * // "wss://b.example:4433/"
 * ```
 */
export function goawayRedirect(uri: string, current: URL): URL | undefined {
  if (uri === "") return undefined;
  try {
    const url = new URL(uri, current);
    return GOAWAY_SCHEMES.includes(url.protocol) ? url : undefined;
  } catch {
    return undefined;
  }
}
