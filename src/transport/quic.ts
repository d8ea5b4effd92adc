/**
 * Native QUIC sessions (`Deno.QuicConn`) behind the transport-neutral
 * {@linkcode Session}: wrapping an accepted connection, dialing
 * `moqt://host:port/path?query` URLs, and a small listener for tests and
 * single-protocol servers.
 *
 * Deno 2.9 facts this code respects: a `QuicIncoming`'s address getters
 * consume it, so addresses are read from the accepted connection; outgoing
 * streams use `waitUntilAvailable` so the peer's stream limit applies
 * back-pressure instead of throwing; stream resets carry no code.
 */
import { errorText } from "../errors/mod.ts";
import type {
  BidiStream,
  RecvStream,
  SendStream,
  Session,
  SessionCloseInfo,
  StreamOptions,
} from "./session.ts";
import { SessionClosedError } from "./errors.ts";
import { fromDenoQuicError } from "./quic_errors.ts";

/** Options for {@linkcode quicSession}. */
export interface QuicSessionOptions {
  /** The URL the client dialed, when known (client side). */
  readonly url?: URL;
}

/** Formats a Deno address as `host:port` (IPv6 in brackets). */
export function formatAddr(addr: Deno.NetAddr): string {
  return addr.hostname.includes(":")
    ? `[${addr.hostname}]:${addr.port}`
    : `${addr.hostname}:${addr.port}`;
}

class QuicSession implements Session {
  readonly transport = "quic" as const;
  readonly protocol: string;
  readonly url: URL | undefined;
  readonly remote: string;
  readonly closed: Promise<SessionCloseInfo>;
  readonly #conn: Deno.QuicConn;
  readonly #bidi: ReadableStreamDefaultReader<Deno.QuicBidirectionalStream>;
  readonly #uni: ReadableStreamDefaultReader<Deno.QuicReceiveStream>;
  #ended = false;
  #local: SessionCloseInfo | undefined;

  constructor(conn: Deno.QuicConn, options: QuicSessionOptions) {
    this.#conn = conn;
    this.protocol = conn.protocol ?? "";
    this.url = options.url;
    let remote = "";
    try {
      remote = formatAddr(conn.remoteAddr);
    } catch {
      // connection already gone; keep an empty address
    }
    this.remote = remote;
    this.#bidi = conn.incomingBidirectionalStreams.getReader();
    this.#uni = conn.incomingUnidirectionalStreams.getReader();
    // Deno reports a locally closed connection without our code: prefer what we sent.
    this.closed = conn.closed.then(
      (info): SessionCloseInfo => this.#local ?? { code: info.closeCode, reason: info.reason },
      (err: unknown): SessionCloseInfo =>
        this.#local ?? {
          code: 0,
          reason: errorText(err),
          dropped: true,
        },
    ).finally(() => {
      this.#ended = true;
    });
  }

  get maxDatagramSize(): number {
    try {
      return this.#conn.maxDatagramSize;
    } catch {
      // The connection is gone: no datagram fits.
      return 0;
    }
  }

  async openBidi(options?: StreamOptions): Promise<BidiStream> {
    const s = await this.#open(() => this.#conn.createBidirectionalStream(openOptions(options)));
    return {
      readable: s.readable,
      writable: s.writable,
      setSendOrder: (order: number) => setOrder(s.writable, order),
    };
  }

  async openUni(options?: StreamOptions): Promise<SendStream> {
    const s = await this.#open(() => this.#conn.createUnidirectionalStream(openOptions(options)));
    return { writable: s, setSendOrder: (order: number) => setOrder(s, order) };
  }

  translateError(err: unknown): unknown {
    return fromDenoQuicError(err);
  }

  // Opens fail with neutral errors; Deno words an open on a closed
  // connection as a plain Error ("closed"), so our own state decides that one.
  async #open<T>(open: () => Promise<T>): Promise<T> {
    try {
      return await open();
    } catch (err) {
      const translated = fromDenoQuicError(err);
      if (translated !== err || !this.#ended) throw translated;
      throw new SessionClosedError(errorText(err), { cause: err });
    }
  }

  async acceptBidi(): Promise<BidiStream | undefined> {
    if (this.#ended) return undefined;
    try {
      const { value, done } = await this.#bidi.read();
      if (done) return undefined;
      const s = value;
      return {
        readable: s.readable,
        writable: s.writable,
        setSendOrder: (order: number) => setOrder(s.writable, order),
      };
    } catch {
      // The connection ended: no more streams to accept.
      return undefined;
    }
  }

  async acceptUni(): Promise<RecvStream | undefined> {
    if (this.#ended) return undefined;
    try {
      const { value, done } = await this.#uni.read();
      return done ? undefined : { readable: value };
    } catch {
      // The connection ended: no more streams to accept.
      return undefined;
    }
  }

  async sendDatagram(data: Uint8Array): Promise<void> {
    try {
      await this.#conn.sendDatagram(data);
    } catch {
      // best effort
    }
  }

  async readDatagram(): Promise<Uint8Array | undefined> {
    if (this.#ended) return undefined;
    try {
      return await this.#conn.readDatagram();
    } catch {
      // The connection ended: no more datagrams.
      return undefined;
    }
  }

  close(code: number, reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#local = { code, reason };
    try {
      this.#conn.close({ closeCode: code, reason });
    } catch {
      // already closed
    }
  }
}

// Outgoing streams wait for the peer's stream limit instead of failing on it.
function openOptions(options: StreamOptions | undefined): Deno.QuicSendStreamOptions {
  return { sendOrder: options?.sendOrder ?? 0, waitUntilAvailable: true };
}

function setOrder(stream: Deno.QuicSendStream, order: number): void {
  try {
    stream.sendOrder = order;
  } catch {
    // stream finished
  }
}

/**
 * Wraps an established `Deno.QuicConn` (accepted by a server or dialed by a
 * client) as a {@linkcode Session}. The combined listener calls this for
 * connections whose ALPN is a moq-lite version.
 */
export function quicSession(conn: Deno.QuicConn, options: QuicSessionOptions = {}): Session {
  return new QuicSession(conn, options);
}

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
export class QuicConnectError extends Error {
  /** Stable kind callers may branch on. */
  readonly kind: "url" | "tls" | "alpn" | "aborted" | "network";
  /** Makes the error. */
  constructor(kind: QuicConnectError["kind"], message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "QuicConnectError";
    this.kind = kind;
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
    throw new QuicConnectError("url", `Cannot dial "${url.href}": scheme must be moqt:`);
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
  let conn: Deno.QuicConn;
  try {
    const pending = Deno.connectQuic(dial);
    conn = options.signal ? await raceAbort(pending, options.signal) : await pending;
  } catch (err) {
    if (options.signal?.aborted) {
      throw new QuicConnectError("aborted", `Dial to "${url.host}" aborted`, { cause: err });
    }
    const message = errorText(err);
    const kind = /certificate|handshake|tls/i.test(message) ? "tls" : "network";
    throw new QuicConnectError(kind, `Cannot dial "${url.host}": ${message}`, { cause: err });
  }
  const protocol = conn.protocol ?? "";
  if (!alpn.includes(protocol)) {
    conn.close({ closeCode: 0, reason: "unsupported ALPN" });
    throw new QuicConnectError("alpn", `Cannot dial "${url.host}": no common protocol`);
  }
  return quicSession(conn, { url });
}

function raceAbort<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
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

/** Options for {@linkcode listenQuic}. */
export interface ListenQuicOptions {
  /** Interface to bind (default 127.0.0.1). */
  readonly hostname?: string;
  /** Port (0 = any). */
  readonly port?: number;
  /** Certificate chain (PEM). */
  readonly cert: string;
  /** Private key (PEM). */
  readonly key: string;
  /** ALPN tokens accepted, preferred first: the application's protocols (moq's `VERSIONS`). */
  readonly alpn: readonly string[];
  /** Incoming uni stream limit per connection (default 1000). */
  readonly maxConcurrentUnidirectionalStreams?: number;
  /** Incoming bidi stream limit per connection (default 100). */
  readonly maxConcurrentBidirectionalStreams?: number;
  /** Idle timeout in ms (default 30 s). */
  readonly maxIdleTimeout?: number;
}

/** A running native QUIC listener that yields sessions. */
export interface QuicSessionListener extends AsyncIterable<Session> {
  /** The bound address. */
  readonly addr: Deno.NetAddr;
  /** Stops accepting and closes the endpoint (and its connections). */
  stop(): void;
}

/**
 * Listens for native QUIC connections and yields each handshaken connection
 * as a {@linkcode Session}; failed handshakes are skipped. For tests and
 * single-protocol servers; the relay uses the combined listener.
 */
export function listenQuic(options: ListenQuicOptions): QuicSessionListener {
  const endpoint = new Deno.QuicEndpoint({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
  });
  const listener = endpoint.listen({
    cert: options.cert,
    key: options.key,
    alpnProtocols: [...options.alpn],
    maxConcurrentUnidirectionalStreams: options.maxConcurrentUnidirectionalStreams ?? 1000,
    maxConcurrentBidirectionalStreams: options.maxConcurrentBidirectionalStreams ?? 100,
    maxIdleTimeout: options.maxIdleTimeout ?? 30_000,
  });
  let stopped = false;
  return {
    addr: endpoint.addr,
    stop(): void {
      if (stopped) return;
      stopped = true;
      try {
        listener.stop();
      } catch {
        // already stopped
      }
      try {
        endpoint.close();
      } catch {
        // already closed
      }
    },
    async *[Symbol.asyncIterator](): AsyncIterator<Session> {
      // Handshakes run concurrently, so one slow client never delays the next.
      const ready: Session[] = [];
      let ended = false;
      let wake: (() => void) | undefined;
      const notify = () => {
        const w = wake;
        wake = undefined;
        w?.();
      };
      (async () => {
        while (!stopped) {
          let incoming: Deno.QuicIncoming;
          try {
            incoming = await listener.incoming();
          } catch {
            // The listener was stopped: stop accepting.
            break;
          }
          try {
            Promise.resolve(incoming.accept<false>()).then((conn: Deno.QuicConn) => {
              ready.push(quicSession(conn));
              notify();
            }, () => {});
          } catch {
            // refused before the handshake started
          }
        }
        ended = true;
        notify();
        // The loop contains its own failures; this only keeps an unexpected one from going unhandled.
      })().catch(() => {});
      for (;;) {
        const next = ready.shift();
        if (next) {
          yield next;
          continue;
        }
        if (ended || stopped) return;
        await new Promise<void>((resolve) => wake = resolve);
      }
    },
  };
}
