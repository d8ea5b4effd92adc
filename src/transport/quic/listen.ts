/** A small native QUIC listener, for tests and single-protocol servers. */
import type { Session } from "../session.ts";
import { quicSession } from "./session.ts";
import { bindHostname } from "../every_interface.ts";

/** Options for {@linkcode listenQuic}. */
export interface ListenQuicOptions {
  /** Interface to bind (default 127.0.0.1; "" every interface, see `bindHostname`). */
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
    hostname: bindHostname(options.hostname ?? "127.0.0.1"),
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
          // Deno 2.9 panics when a connection is accepted after listener.stop().
          if (stopped) {
            incoming.refuse();
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
