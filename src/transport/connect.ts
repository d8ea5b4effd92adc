/**
 * Dialing a MoQ session by URL scheme: `moqt://` native QUIC, `https://`
 * WebTransport over HTTP/3, `wss://` (or `ws://` on loopback) QMux over
 * WebSocket, for networks that drop UDP. The funnel's relay client and the
 * relay's peering dial through it.
 */
import { redactUrl } from "../error_text/mod.ts";
import { connectQMux } from "./qmux/mod.ts";
import { connectQuicSession } from "./quic/mod.ts";
import type { Session } from "./session.ts";
import { connectWebTransport } from "./webtransport/mod.ts";

/** The URL schemes {@linkcode connectSession} dials. */
export { SESSION_SCHEMES } from "../config/mod.ts";

/** Options of {@linkcode connectSession}; each transport uses what applies to it. */
export interface ConnectSessionOptions {
  /** The application's protocols, preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** Extra PEM root certificates to trust. */
  readonly caCerts?: readonly string[];
  /** TLS server name when the URL names an address (native QUIC and WebSocket). */
  readonly serverName?: string;
  /** Pin the server certificate by SHA-256 (QUIC and WebTransport; WebSocket cannot pin). */
  readonly serverCertificateHashes?: readonly Uint8Array[];
  /** Skip certificate verification (WebTransport only, and only under --unsafely-ignore-certificate-errors). */
  readonly insecure?: boolean;
  /** Give up a WebTransport or WebSocket handshake after this long (ms). */
  readonly timeoutMs?: number;
  /** Abandons a native QUIC or WebSocket dial. */
  readonly signal?: AbortSignal;
  /** QUIC idle timeout (ms), native QUIC and WebTransport. */
  readonly maxIdleTimeout?: number;
  /** QUIC keep-alive interval (ms), native QUIC and WebTransport. */
  readonly keepAliveInterval?: number;
}

/**
 * Opens a session to `url` over the transport its scheme names. Rejects
 * with TypeError for other schemes, and with the transport's connect error
 * otherwise.
 *
 * @example
 * ```ts
 * const session = await connectSession(new URL("wss://relay.example:4433/?jwt=..."), {
 *   protocols: VERSIONS,
 * });
 * ```
 */
export function connectSession(url: URL, options: ConnectSessionOptions): Promise<Session> {
  const o = options;
  const hashes = o.serverCertificateHashes;
  switch (url.protocol) {
    case "moqt:":
      return connectQuicSession(url, {
        alpn: o.protocols,
        ...(o.serverName !== undefined ? { serverName: o.serverName } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        ...(o.maxIdleTimeout !== undefined ? { maxIdleTimeout: o.maxIdleTimeout } : {}),
        ...(o.keepAliveInterval !== undefined ? { keepAliveInterval: o.keepAliveInterval } : {}),
        ...(o.caCerts ? { caCerts: o.caCerts } : {}),
        ...(hashes
          ? { serverCertificateHashes: hashes.map((value) => ({ algorithm: "sha-256", value })) }
          : {}),
      });
    case "https:":
      return connectWebTransport(url, {
        protocols: o.protocols,
        ...(o.caCerts ? { caCerts: o.caCerts } : {}),
        ...(hashes ? { serverCertificateHashes: hashes } : {}),
        ...(o.insecure ? { insecure: true } : {}),
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
        ...(o.maxIdleTimeout !== undefined ? { maxIdleTimeout: o.maxIdleTimeout } : {}),
        ...(o.keepAliveInterval !== undefined ? { keepAliveInterval: o.keepAliveInterval } : {}),
      });
    case "wss:":
    case "ws:":
      return connectQMux(url, {
        protocols: o.protocols,
        ...(o.serverName !== undefined ? { serverName: o.serverName } : {}),
        ...(o.caCerts ? { caCerts: o.caCerts } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      });
  }
  return Promise.reject(
    new TypeError(
      `Cannot dial "${
        redactUrl(url)
      }": the scheme must be moqt: (QUIC), https: (WebTransport) or wss: (WebSocket)`,
    ),
  );
}
