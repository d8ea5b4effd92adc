import { VERSIONS } from "../../moq/mod.ts";
import {
  connectQMux,
  connectQuicSession,
  IDLE_TIMEOUT_MS,
  keepAliveFor,
  type Session,
} from "../../transport/mod.ts";

/**
 * Opens the transport session to a peer: the one place a peer URL becomes a
 * {@linkcode Session}. `url` is `moqt://host:port/?peer=…&jwt=…` (or the
 * scheme of a redirect), `serverName` the name its certificate must carry.
 */
export type PeerTransport = (
  url: URL,
  serverName: string,
  signal: AbortSignal,
) => Promise<Session>;

/**
 * Peers over native QUIC or WebSocket: `moqt:` and `https:` URLs are both
 * dialed on their port over QUIC with moq-lite's ALPN (a sluice relay
 * serves both on one port); `wss:` URLs over QMux on WebSocket, for peers
 * behind networks that drop UDP.
 */
export function peerTransport(
  caCerts: readonly string[] | undefined,
  idleTimeoutMs: number = IDLE_TIMEOUT_MS,
): PeerTransport {
  return async (url, serverName, signal) => {
    if (url.protocol === "wss:") {
      return await connectQMux(url, {
        protocols: VERSIONS,
        serverName,
        signal,
        ...(caCerts ? { caCerts } : {}),
      });
    }
    if (url.protocol !== "moqt:" && url.protocol !== "https:") {
      throw new TypeError(`Cannot dial a peer at "${url.protocol}//": use moqt:, https: or wss:`);
    }
    const quicUrl = new URL(url.href.replace(/^https:/, "moqt:"));
    if (quicUrl.port === "" && url.protocol === "https:") quicUrl.port = "443";
    return await connectQuicSession(quicUrl, {
      alpn: VERSIONS,
      serverName,
      signal,
      // A peer that vanished without closing is noticed within this, so its routes fail over.
      maxIdleTimeout: idleTimeoutMs,
      keepAliveInterval: keepAliveFor(idleTimeoutMs),
      ...(caCerts ? { caCerts } : {}),
    });
  };
}
