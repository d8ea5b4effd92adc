/**
 * The client's Deno-only transports: native QUIC and sluice's own
 * WebTransport over HTTP/3. Only ever loaded by dynamic import.
 */
import type { Session } from "../transport/session.ts";
import { connectQuicSession } from "../transport/quic/dial.ts";
import { connectWebTransport } from "../transport/webtransport/client.ts";
import type { DialOptions } from "./dial.ts";

function hashBytes(value: ArrayBuffer | ArrayBufferView): Uint8Array {
  return value instanceof ArrayBuffer
    ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

/** Dials `moqt://` over native QUIC. */
export function dialQuic(url: URL, options: DialOptions): Promise<Session> {
  const hashes = options.serverCertificateHashes?.map((h) => ({
    algorithm: h.algorithm,
    value: hashBytes(h.value),
  }));
  return connectQuicSession(url, {
    alpn: options.protocols,
    ...(hashes ? { serverCertificateHashes: hashes } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Dials `https://` with sluice's WebTransport client. */
export function dialWebTransport(url: URL, options: DialOptions): Promise<Session> {
  const hashes = options.serverCertificateHashes?.map((h) => hashBytes(h.value));
  return connectWebTransport(url, {
    protocols: options.protocols,
    ...(hashes ? { serverCertificateHashes: hashes } : {}),
  });
}
