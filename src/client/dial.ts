/**
 * Opening a transport session to a MoQ URL in whatever runtime runs the
 * client. In a browser: the browser's own WebTransport for `https://`. In
 * Deno: native QUIC for `moqt://` and sluice's own WebTransport client for
 * `https://`, loaded by dynamic import so a browser bundle never needs them.
 */
import type { Session } from "../transport/session.ts";
import {
  connectWebTransportApi,
  hasWebTransportApi,
} from "../transport/webtransport/web_transport_api.ts";

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
  /** Development certificates to accept by hash. */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
}

/** Opens a transport session to `url` (the URL carries the credential as `jwt`). */
export type Dialer = (url: URL, options: DialOptions) => Promise<Session>;

/** True when running in Deno (its transports are loaded on demand). */
export function inDeno(): boolean {
  return typeof (globalThis as { Deno?: { version?: unknown } }).Deno?.version === "object";
}

/**
 * The default dialer: `moqt://` is native QUIC (Deno only); `https://` is
 * WebTransport (the browser's own, or sluice's client in Deno).
 */
export async function dialSession(url: URL, options: DialOptions): Promise<Session> {
  if (url.protocol === "moqt:") {
    if (!inDeno()) {
      throw new TypeError(`Cannot dial "${url.href}": native QUIC (moqt://) needs Deno`);
    }
    const deno = await import("./deno_dial.ts");
    return await deno.dialQuic(url, options);
  }
  if (url.protocol === "https:") {
    if (inDeno()) {
      const deno = await import("./deno_dial.ts");
      return await deno.dialWebTransport(url, options);
    }
    if (hasWebTransportApi()) {
      return await connectWebTransportApi(url, {
        protocols: options.protocols,
        ...(options.serverCertificateHashes
          ? { serverCertificateHashes: options.serverCertificateHashes }
          : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    }
    throw new TypeError(`Cannot dial "${url.href}": this browser has no WebTransport`);
  }
  throw new TypeError(`Cannot dial "${url.href}": the scheme must be https or moqt`);
}
