/** Dialing a `moqt://` URL over native QUIC. */
import { SluiceError } from "../../errors/mod.ts";
import { errorText, redactUrl } from "../../error_text/mod.ts";
import { isIpLiteral } from "../address.ts";
import type { Session } from "../session.ts";
import { quicSession } from "./session.ts";

/** A certificate hash to pin (as in WebTransport's `serverCertificateHashes`). */
export interface CertificateHash {
  /** Only "sha-256". */
  readonly algorithm: "sha-256";
  /** The SHA-256 of the DER certificate. */
  readonly value: Uint8Array;
}

/** Options for {@linkcode connectQuicSession}. */
export interface ConnectQuicSessionOptions {
  /** Extra trusted root certificates (PEM), e.g. a development certificate file's content. */
  readonly caCerts?: readonly string[];
  /** Accept exactly these certificates (self-signed, ≤ 14 days, ECDSA), as browsers do. */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /**
   * Skip certificate verification. Deno 2.9 offers no way to do this for QUIC,
   * so `true` throws a TypeError: use `caCerts` or `serverCertificateHashes`.
   */
  readonly insecure?: boolean;
  /** ALPN offers, preferred first: the application's protocols (moq's `VERSIONS`). */
  readonly alpn: readonly string[];
  /** TLS server name (default: the URL's host). */
  readonly serverName?: string;
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
  /** Idle timeout in ms (default 30 s) and keep-alive (default 10 s). */
  readonly maxIdleTimeout?: number;
  /** Keep-alive interval in ms. */
  readonly keepAliveInterval?: number;
  /** Incoming stream limits (defaults 1000 uni, 100 bidi). */
  readonly maxConcurrentUnidirectionalStreams?: number;
  /** Incoming bidirectional stream limit. */
  readonly maxConcurrentBidirectionalStreams?: number;
}

/** Dial failed: bad URL, TLS, refused ALPN, or abort. */
export class QuicConnectError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = [
    "invalid_url",
    "tls_failed",
    "alpn_refused",
    "cancelled",
    "network",
  ] as const;
  /** Stable code callers may branch on. */
  declare readonly code: (typeof QuicConnectError.codes)[number];
  /** Makes the error. */
  constructor(code: QuicConnectError["code"], message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

/**
 * Dials a `moqt://host:port/path?query` URL over native QUIC. The path and
 * query travel in lite-05's SETUP (the moq layer sends them from `url`).
 *
 * @example
 * ```ts
 * const session = await connectQuicSession(new URL("moqt://127.0.0.1:4443/?jwt=..."), {
 *   alpn: VERSIONS, // from src/moq: moq-lite-05, moq-lite-04
 *   caCerts: [await Deno.readTextFile("certs/server.crt")],
 * });
 * ```
 */
export async function connectQuicSession(
  url: URL,
  options: ConnectQuicSessionOptions,
): Promise<Session> {
  if (url.protocol !== "moqt:" && url.protocol !== "https:" && url.protocol !== "moq:") {
    throw new QuicConnectError(
      "invalid_url",
      `Cannot dial "${redactUrl(url)}": scheme must be moqt:`,
    );
  }
  if (options.insecure) {
    throw new TypeError(
      "Cannot dial without certificate verification: Deno QUIC has no insecure mode; pass caCerts or serverCertificateHashes",
    );
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port ? Number(url.port) : 443;
  const alpn = [...options.alpn];
  // Deno 2.9 honours serverCertificateHashes at runtime; its type declarations omit it.
  const dial: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes?: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname,
    port,
    alpnProtocols: alpn,
    serverName: options.serverName ?? hostname,
    maxIdleTimeout: options.maxIdleTimeout ?? 30_000,
    keepAliveInterval: options.keepAliveInterval ?? 10_000,
    maxConcurrentUnidirectionalStreams: options.maxConcurrentUnidirectionalStreams ?? 1000,
    maxConcurrentBidirectionalStreams: options.maxConcurrentBidirectionalStreams ?? 100,
  };
  if (options.caCerts) dial.caCerts = [...options.caCerts];
  if (options.serverCertificateHashes) {
    dial.serverCertificateHashes = options.serverCertificateHashes.map((h) => ({
      algorithm: h.algorithm,
      value: h.value,
    }));
  }
  options.signal?.throwIfAborted();
  // An abandoned handshake would go on retransmitting until the idle timeout, holding a UDP
  // socket: with a signal the dial gets its own endpoint, and closing it ends the handshake at
  // once. Names keep Deno's endpoint (its address family is unknown until resolved).
  const endpoint = options.signal && isIpLiteral(hostname)
    ? new Deno.QuicEndpoint({ hostname: hostname.includes(":") ? "::" : "0.0.0.0", port: 0 })
    : undefined;
  if (endpoint) dial.endpoint = endpoint;
  let conn: Deno.QuicConn;
  try {
    const pending = Deno.connectQuic(dial);
    conn = options.signal ? await raceAbort(pending, options.signal, endpoint) : await pending;
  } catch (err) {
    closeEndpoint(endpoint);
    if (options.signal?.aborted) {
      throw new QuicConnectError("cancelled", `Dial to "${url.host}" aborted`, { cause: err });
    }
    const message = errorText(err);
    const kind = /certificate|handshake|tls/i.test(message) ? "tls_failed" : "network";
    throw new QuicConnectError(kind, `Cannot dial "${url.host}": ${message}`, { cause: err });
  }
  if (endpoint) conn.closed.finally(() => closeEndpoint(endpoint)).catch(() => {});
  const protocol = conn.protocol ?? "";
  if (!alpn.includes(protocol)) {
    conn.close({ closeCode: 0, reason: "unsupported ALPN" });
    throw new QuicConnectError("alpn_refused", `Cannot dial "${url.host}": no common protocol`);
  }
  return quicSession(conn, { url });
}

function closeEndpoint(endpoint: Deno.QuicEndpoint | undefined): void {
  try {
    endpoint?.close();
  } catch {
    // already closed
  }
}

function raceAbort<T>(
  pending: Promise<T>,
  signal: AbortSignal,
  endpoint: Deno.QuicEndpoint | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      closeEndpoint(endpoint);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    // A dial that completes after the abort must not leak its connection.
    pending.then((value) => {
      if (signal.aborted && value && typeof value === "object" && "close" in value) {
        try {
          (value as { close(): void }).close();
        } catch {
          // ignore
        }
      }
    }, () => {});
  });
}
