import type { Listener } from "../transport/mod.ts";
import type { RunningServer } from "../http/mod.ts";

/**
 * Binds a UDP listener and then a TCP server on the same port number (MoQ
 * over QUIC and WebTransport on UDP; HTTPS and WebSocket on TCP). With port
 * 0 the kernel picks a free UDP port whose TCP twin may be taken (by any
 * outgoing connection's ephemeral port), so that case retries with a new pick.
 *
 * @example
 * ```ts
 * const { listener, server } = await bindSamePort(0, (port) => listen({ ...quic, port }),
 *   (port) => startHttpServer(handler, { hostname, port, tls }));
 * ```
 */
export async function bindSamePort(
  port: number,
  udp: (port: number) => Promise<Listener>,
  tcp: (port: number) => Promise<RunningServer>,
): Promise<{ listener: Listener; server: RunningServer }> {
  for (let attempt = 1;; attempt++) {
    const listener = await udp(port);
    try {
      return { listener, server: await tcp(listener.addr.port) };
    } catch (e) {
      await listener.stop();
      if (port !== 0 || !(e instanceof Deno.errors.AddrInUse) || attempt >= 20) throw e;
    }
  }
}
