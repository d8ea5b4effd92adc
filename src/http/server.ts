import { bindHostname } from "../transport/mod.ts";

/** A running HTTP server. */
export interface RunningServer {
  /** The bound address; with port 0 the real port is here. */
  readonly addr: Deno.NetAddr;
  /** Stops accepting, lets in-flight requests finish, and resolves when closed. */
  stop(): Promise<void>;
  /** Resolves when the server has stopped for any reason. */
  readonly finished: Promise<void>;
}

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Interface to bind; "" is every interface (`::`, or `0.0.0.0` without IPv6). */
  readonly hostname: string;
  readonly port: number;
  /** PEM certificate and key to serve HTTPS; plain HTTP without them. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Called for errors the handler did not turn into a response. */
  readonly onError?: (error: unknown) => Response;
}

/**
 * Starts `Deno.serve` and resolves once it listens, with its real address.
 *
 * @example
 * ```ts
 * const server = await startHttpServer(() => new Response("ok"), { hostname: "127.0.0.1", port: 0 });
 * await server.stop();
 * ```
 */
export function startHttpServer(
  handler: (
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>,
  options: HttpServerOptions,
): Promise<RunningServer> {
  const controller = new AbortController();
  try {
    const server = Deno.serve({
      hostname: bindHostname(options.hostname),
      port: options.port,
      signal: controller.signal,
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
      // Deno.serve binds before it returns; silence its default "Listening on" line.
      onListen: () => {},
      ...(options.onError ? { onError: options.onError } : {}),
    }, handler);
    return Promise.resolve({
      addr: server.addr,
      stop: async () => {
        controller.abort();
        await server.finished;
      },
      finished: server.finished,
    });
  } catch (error) {
    return Promise.reject(error);
  }
}
