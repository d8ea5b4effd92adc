import { freeUdpTcpPort } from "../../src/transport/mod.ts";

/**
 * A TCP proxy in front of a real service, so a test can make the service
 * "go away" (every connection cut, new ones refused) and "come back"
 * without stopping the shared server itself.
 */
export interface TcpProxy {
  /** Port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Cuts every open connection and stops listening (connections are refused) until {@link restore}. */
  cut(): void;
  /**
   * Like a server that hangs: connections are still accepted, but nothing is
   * answered on them, new or already open, ever (their bytes are swallowed).
   * After {@link restore} only new connections work again.
   */
  stall(): void;
  /** Forwards connections again. */
  restore(): void;
  /**
   * Stops reading what the service sends toward its clients (a client that no
   * longer reads its socket): the service's writes back up in its own buffers.
   */
  holdDownstream(): void;
  /** Reads from the service again after {@link holdDownstream}. */
  releaseDownstream(): void;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Starts a proxy on a free port forwarding to `host:port`. */
export function startTcpProxy(host: string, port: number): TcpProxy {
  // Outside the ephemeral range, so restore() can rebind it after a cut.
  let listener: Deno.Listener | undefined = Deno.listen({
    hostname: "127.0.0.1",
    port: freeUdpTcpPort(),
  });
  const proxyPort = (listener.addr as Deno.NetAddr).port;
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  let down = false;
  let stalled = false;
  let held: { promise: Promise<void>; resolve: () => void } | undefined;
  // Connections open when a stall began (or opened during it) never answer again.
  const hung = new Set<Deno.Conn>();

  const closeQuietly = (conn: Deno.Conn): void => {
    open.delete(conn);
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  };

  const pipe = async (from: Deno.Conn, to: Deno.Conn, downstream: boolean): Promise<void> => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        while (downstream && held) await held.promise;
        const n = await from.read(buffer);
        if (n === null) break;
        if (hung.has(from) || hung.has(to)) continue; // swallowed
        let done = 0;
        while (done < n) done += await to.write(buffer.subarray(done, n));
      }
    } catch {
      // Either side closed.
    }
    closeQuietly(from);
    closeQuietly(to);
  };

  const serve = async (client: Deno.Conn): Promise<void> => {
    if (down) return closeQuietly(client);
    if (stalled) {
      // Accepted, then never answered: read and drop whatever the client sends.
      hung.add(client);
      const buffer = new Uint8Array(64 * 1024);
      try {
        while ((await client.read(buffer)) !== null) { /* swallowed */ }
      } catch {
        // closed
      }
      return closeQuietly(client);
    }
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({ hostname: host, port });
    } catch {
      return closeQuietly(client);
    }
    open.add(upstream);
    if (down) {
      closeQuietly(upstream);
      return closeQuietly(client);
    }
    await Promise.all([pipe(client, upstream, false), pipe(upstream, client, true)]);
  };

  const track = (p: Promise<void>): void => {
    tasks.add(p);
    p.finally(() => tasks.delete(p));
  };

  const accept = (l: Deno.Listener): void => {
    track((async () => {
      try {
        for await (const conn of l) {
          open.add(conn);
          track(serve(conn));
        }
      } catch {
        // Listener closed.
      }
    })());
  };
  accept(listener);

  return {
    port: proxyPort,
    cut(): void {
      // Like a stopped server: connections drop and new ones are refused.
      down = true;
      listener?.close();
      listener = undefined;
      for (const conn of [...open]) closeQuietly(conn);
    },
    stall(): void {
      stalled = true;
      for (const conn of open) hung.add(conn);
    },
    restore(): void {
      down = false;
      stalled = false;
      if (listener) return;
      listener = Deno.listen({ hostname: "127.0.0.1", port: proxyPort });
      accept(listener);
    },
    holdDownstream(): void {
      held ??= Promise.withResolvers<void>();
    },
    releaseDownstream(): void {
      held?.resolve();
      held = undefined;
    },
    async close(): Promise<void> {
      held?.resolve();
      held = undefined;
      down = true;
      listener?.close();
      listener = undefined;
      for (const conn of [...open]) closeQuietly(conn);
      while (tasks.size > 0) await Promise.allSettled([...tasks]);
    },
  };
}
