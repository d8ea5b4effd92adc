/**
 * The client's dialing in Deno: sluice's own transports by URL scheme, with
 * `https://` falling back to `wss://` as in browsers. Only ever loaded by
 * dynamic import.
 */
import { connectSession, type ConnectSessionOptions } from "../transport/mod.ts";
import type { Session } from "../transport/mod.ts";
import { type DialOptions, WEBSOCKET_HEAD_START_MS, webSocketUrl } from "./dial.ts";
import { firstToOpen } from "./first_to_open.ts";

function hashBytes(value: ArrayBuffer | ArrayBufferView): Uint8Array {
  return value instanceof ArrayBuffer
    ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

/** Dials `url` with sluice's transports: QUIC, WebTransport (then WebSocket), or WebSocket. */
export function dialInDeno(url: URL, options: DialOptions): Promise<Session> {
  const o: ConnectSessionOptions = {
    protocols: options.protocols,
    ...(options.serverCertificateHashes
      ? { serverCertificateHashes: options.serverCertificateHashes.map((h) => hashBytes(h.value)) }
      : {}),
    ...(options.caCerts ? { caCerts: options.caCerts } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  if (url.protocol !== "https:") return connectSession(url, o);
  return firstToOpen(
    [() => connectSession(url, o), () => connectSession(webSocketUrl(url), o)],
    WEBSOCKET_HEAD_START_MS,
  );
}
