/**
 * The URL schemes sluice dials, named here so configuration can check a URL
 * without loading the transports: `moqt:` native QUIC, `https:` WebTransport
 * over HTTP/3, `wss:` (or `ws:` on loopback) QMux over WebSocket.
 */

/** The URL schemes a MoQ session is dialed with (RELAY_URL, PEERS, the client). */
export const SESSION_SCHEMES: readonly string[] = ["moqt:", "https:", "wss:", "ws:"];

/** The URL schemes a GOAWAY redirect may name: those a relay's GOAWAY_REDIRECT_URI takes. */
export const GOAWAY_SCHEMES: readonly string[] = ["moqt:", "https:", "wss:"];
