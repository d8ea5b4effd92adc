// A port picked ahead of time for a child process (tests, the load
// generator). Port 0 cannot be used there: the parent must know the port,
// and a relay must bind the same number on UDP and TCP.

/** Below Linux's default ephemeral range (32768–60999), so outgoing connections never take it. */
const LOW = 20000;
const HIGH = 32767;

/**
 * A port that is free on `hostname` for both UDP and TCP at the moment of
 * the call. It is chosen outside the kernel's ephemeral range, so only another
 * process binding it on purpose can take it before the caller's child does.
 *
 * @example
 * ```ts
 * const port = freeUdpTcpPort();
 * // spawn a relay with RELAY_ADDR=127.0.0.1:${port}
 * ```
 */
export function freeUdpTcpPort(hostname = "127.0.0.1"): number {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (isFree(hostname, port)) return port;
  }
  throw new Error(`No free UDP+TCP port between ${LOW} and ${HIGH} on ${hostname}`);
}

function isFree(hostname: string, port: number): boolean {
  let udp: Deno.DatagramConn | undefined;
  let tcp: Deno.Listener | undefined;
  try {
    udp = Deno.listenDatagram({ transport: "udp", hostname, port });
    tcp = Deno.listen({ hostname, port });
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) return false;
    throw e;
  } finally {
    udp?.close();
    tcp?.close();
  }
}
