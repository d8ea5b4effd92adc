/**
 * Opening a transport session to a MoQ URL in whatever runtime runs the
 * client. In a browser: `https://` is the browser's own WebTransport,
 * falling back to QMux over its WebSocket (`wss://`, same host and port);
 * `wss://` is QMux directly. In Deno: the same schemes through sluice's own
 * transports, plus `moqt://` native QUIC; those are loaded by dynamic
 * import, so a browser bundle never needs them.
 */
import type { Session } from "../transport/mod.ts";
import { connectQMuxWeb } from "../transport/mod.ts";
import { connectWebTransportApi, hasWebTransportApi } from "../transport/mod.ts";
import { firstToOpen } from "./first_to_open.ts";

/** A certificate to accept by its SHA-256, as the W3C WebTransport API takes it. */
export interface CertificateHash {
  /** Only "sha-256". */
  readonly algorithm: "sha-256";
  /** The SHA-256 of the DER certificate. */
  readonly value: ArrayBuffer | ArrayBufferView;
}

/** What a dial needs besides the URL. */
export interface DialOptions {
  /** The application protocols to offer, preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** Development certificates to accept by hash (WebTransport and QUIC; a WebSocket cannot pin). */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /** Extra PEM root certificates to trust (Deno only; a browser trusts what it trusts). */
  readonly caCerts?: readonly string[];
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
}

/** Opens a transport session to `url` (the URL carries the credential as `jwt`). */
export type Dialer = (url: URL, options: DialOptions) => Promise<Session>;

/** The MoQ URL schemes the default dialer takes. */
export const MOQ_SCHEMES: readonly string[] = ["https:", "moqt:", "wss:", "ws:"];

/** How long WebTransport is tried alone before WebSocket is tried too, ms (as @moq/net does). */
export const WEBSOCKET_HEAD_START_MS = 500;

/** True when running in Deno (its transports are loaded on demand). */
export function inDeno(): boolean {
  return typeof (globalThis as { Deno?: { version?: unknown } }).Deno?.version === "object";
}

/** The `wss://` URL on the same host, port, path and query as an `https://` one. */
export function webSocketUrl(url: URL): URL {
  const ws = new URL(url);
  ws.protocol = "wss:";
  return ws;
}

/**
 * The default dialer: `https://` is WebTransport with a WebSocket
 * fallback, `wss://` (`ws://` on loopback) QMux over WebSocket, and
 * `moqt://` native QUIC (Deno only).
 */
export async function dialSession(url: URL, options: DialOptions): Promise<Session> {
  if (inDeno()) {
    const deno = await import("./deno_dial.ts");
    return await deno.dialInDeno(url, options);
  }
  const webSocket = (at: URL) => () =>
    connectQMuxWeb(at, {
      protocols: options.protocols,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  if (url.protocol === "wss:" || url.protocol === "ws:") return await webSocket(url)();
  if (url.protocol === "https:") {
    const attempts = [webSocket(webSocketUrl(url))];
    if (hasWebTransportApi()) {
      attempts.unshift(() =>
        connectWebTransportApi(url, {
          protocols: options.protocols,
          ...(options.serverCertificateHashes
            ? { serverCertificateHashes: options.serverCertificateHashes }
            : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        })
      );
    }
    return await firstToOpen(attempts, WEBSOCKET_HEAD_START_MS);
  }
  throw new TypeError(`Cannot dial "${url.href}": native QUIC (moqt://) needs Deno`);
}
