/**
 * The one UDP listener of a sluice server: native QUIC moq-lite
 * (`moq-lite-05`, `moq-lite-04`) and WebTransport over HTTP/3 (`h3`) on the
 * same port, chosen per connection by TLS ALPN.
 *
 * WebTransport CONNECTs go through `admitWebTransport` before a session
 * exists (it sees path, query, Origin and offered protocols and answers 200
 * with a protocol, or a refusal status). Native QUIC carries the URL only in
 * the moq SETUP, so for those connections admission is the moq layer's job:
 * the listener just yields the session.
 */
import { bindHostname } from "./every_interface.ts";
import { quicSession } from "./quic/mod.ts";
import type { Session } from "./session.ts";
import {
  admitAny,
  type AdmitWebTransport,
  H3Code,
  type H3Connection,
  serveWebTransport,
  type Timers,
} from "./webtransport/mod.ts";

/** ALPN token of HTTP/3 (WebTransport). */
export const H3_ALPN = "h3";

/** Options for {@link listen}. */
export interface ListenOptions {
  /** Interface to bind (default 127.0.0.1; "" every interface, see {@linkcode bindHostname}). */
  readonly hostname?: string;
  /** UDP port (0 picks one; see `addr`). */
  readonly port?: number;
  /** Certificate chain, PEM. */
  readonly certPem: string;
  /** Private key, PEM. */
  readonly keyPem: string;
  /**
   * The application's protocols, preferred first (moq's `VERSIONS`): served
   * as native QUIC ALPN tokens next to `h3`, and chosen from by the default
   * WebTransport admission.
   */
  readonly protocols: readonly string[];
  /** Decides each WebTransport CONNECT (default: accept any path, first of `protocols` offered). */
  readonly admitWebTransport?: AdmitWebTransport;
  /** Receives every session: native QUIC right after the handshake, WebTransport once admitted. */
  readonly onSession: (session: Session) => void;
  /** Incoming unidirectional stream limit per connection (default 1000: moq-lite opens one per group). */
  readonly maxConcurrentUnidirectionalStreams?: number;
  /** Incoming bidirectional stream limit per connection (default 100). */
  readonly maxConcurrentBidirectionalStreams?: number;
  /** QUIC idle timeout in ms (default 30000). */
  readonly maxIdleTimeout?: number;
  /** WebTransport connections that open no session within this time are closed (default 10000 ms). */
  readonly webTransportSessionTimeoutMs?: number;
  /** Largest WebTransport request header section (default 16384). */
  readonly maxFieldSectionSize?: number;
  /** Timer functions (tests). */
  readonly timers?: Timers;
}

/** A running listener. */
export interface Listener {
  /** The bound UDP address. */
  readonly addr: Deno.NetAddr;
  /**
   * Stops accepting; WebTransport sessions get a close capsule (code 0,
   * "server stopping") and their connections close once the peer finished or
   * after 2 s; native QUIC connections close at once. Resolves when all are
   * cleaned up.
   */
  stop(): Promise<void>;
}

/**
 * Starts the combined native-QUIC / WebTransport listener.
 *
 * @example
 * ```ts
 * const server = await listen({
 *   port: 4443, certPem, keyPem,
 *   protocols: VERSIONS, // from src/moq: moq-lite-05, moq-lite-04
 *   admitWebTransport: (req) =>
 *     req.path === "/moq" ? { status: 200, protocol: "moq-lite-05" } : { status: 404 },
 *   onSession: (session) => serveMoq(session),
 * });
 * await server.stop();
 * ```
 */
export function listen(options: ListenOptions): Promise<Listener> {
  const endpoint = new Deno.QuicEndpoint({
    hostname: bindHostname(options.hostname ?? "127.0.0.1"),
    port: options.port ?? 0,
  });
  const alpn = [...options.protocols, H3_ALPN];
  const listener = endpoint.listen({
    cert: options.certPem,
    key: options.keyPem,
    alpnProtocols: alpn,
    maxConcurrentUnidirectionalStreams: options.maxConcurrentUnidirectionalStreams ?? 1000,
    maxConcurrentBidirectionalStreams: options.maxConcurrentBidirectionalStreams ?? 100,
    maxIdleTimeout: options.maxIdleTimeout ?? 30_000,
  });
  return Promise.resolve(new CombinedListener(endpoint, listener, options));
}

/** The listener behind {@link listen}: accepts connections and hands out their sessions. */
class CombinedListener implements Listener {
  readonly addr: Deno.NetAddr;
  readonly #endpoint: Deno.QuicEndpoint;
  readonly #listener: Deno.QuicListener;
  readonly #options: ListenOptions;
  readonly #h3Conns = new Set<H3Connection>();
  readonly #quicConns = new Set<Deno.QuicConn>();
  readonly #handshakes = new Set<Promise<void>>();
  readonly #acceptLoop: Promise<void>;
  #stopped = false;

  constructor(endpoint: Deno.QuicEndpoint, listener: Deno.QuicListener, options: ListenOptions) {
    this.addr = endpoint.addr;
    this.#endpoint = endpoint;
    this.#listener = listener;
    this.#options = options;
    this.#acceptLoop = this.#accept();
  }

  async #accept(): Promise<void> {
    for (;;) {
      let incoming: Deno.QuicIncoming;
      try {
        incoming = await this.#listener.incoming();
      } catch {
        // The endpoint was closed: stop accepting.
        return;
      }
      // #handle() settles each connection itself; a rejection here has nothing left to clean up.
      const task = this.#handle(incoming).catch(() => {});
      this.#handshakes.add(task);
      task.finally(() => this.#handshakes.delete(task));
    }
  }

  async #handle(incoming: Deno.QuicIncoming): Promise<void> {
    // Deno 2.9 panics (quinn-proto endpoint.rs unwrap) when a connection is accepted after
    // listener.stop(): one that arrives while stopping is refused, never accepted.
    if (this.#stopped) {
      incoming.refuse();
      return;
    }
    let conn: Deno.QuicConn;
    try {
      conn = await incoming.accept();
    } catch {
      return; // failed handshake: nothing to clean up
    }
    if (this.#stopped) {
      conn.close({ closeCode: H3Code.NO_ERROR, reason: "server stopping" });
      return;
    }
    if (conn.protocol === H3_ALPN) return this.#serveH3(conn);
    const quicConns = this.#quicConns;
    quicConns.add(conn);
    // A connection that ends with an error is gone all the same: only its end matters here.
    conn.closed.catch(() => {}).finally(() => quicConns.delete(conn));
    this.#deliver(quicSession(conn));
  }

  #serveH3(conn: Deno.QuicConn): void {
    const options = this.#options;
    const h3 = serveWebTransport(conn, {
      admit: options.admitWebTransport ?? admitAny(options.protocols),
      onSession: (s) => this.#deliver(s),
      ...(options.webTransportSessionTimeoutMs !== undefined
        ? { sessionTimeoutMs: options.webTransportSessionTimeoutMs }
        : {}),
      ...(options.maxFieldSectionSize !== undefined
        ? { maxFieldSectionSize: options.maxFieldSectionSize }
        : {}),
      ...(options.timers ? { timers: options.timers } : {}),
    });
    this.#h3Conns.add(h3);
    h3.settled().finally(() => this.#h3Conns.delete(h3));
  }

  #deliver(session: Session): void {
    try {
      this.#options.onSession(session);
    } catch {
      session.close(1, "Session handler failed");
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    try {
      this.#listener.stop();
    } catch {
      // already stopped
    }
    await Promise.allSettled([...this.#handshakes]);
    const closing = [...this.#h3Conns].map((h3) => h3.shutdown("server stopping"));
    for (const c of this.#quicConns) {
      try {
        c.close({ closeCode: 0, reason: "server stopping" });
      } catch {
        // already closed
      }
    }
    await Promise.allSettled(closing);
    await Promise.allSettled([...this.#quicConns].map((c) => c.closed));
    try {
      this.#endpoint.close();
    } catch {
      // already closed
    }
    await this.#acceptLoop;
  }
}
