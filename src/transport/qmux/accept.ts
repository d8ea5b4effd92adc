/**
 * Accepting QMux sessions on an HTTP server: recognising a WebSocket
 * upgrade and upgrading it with the chosen subprotocol. Admission (the
 * credential, Origin, path) is the caller's, before it calls
 * {@linkcode acceptQMux}; picking the subprotocol is
 * {@linkcode selectSubprotocol}.
 */
import type { Timers } from "../../timers/mod.ts";
import type { TransportParams } from "./params.ts";
import { QMuxSession } from "./session.ts";
import { sessionParams } from "./session_options.ts";
import { parseSubprotocol, usesRecords } from "./subprotocol.ts";

/** True for an HTTP/1.1 WebSocket upgrade request (GET with `Upgrade: websocket`). */
export function isWebSocketUpgrade(req: Request): boolean {
  return req.method === "GET" && (req.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
}

/** Options of {@linkcode acceptQMux}. */
export interface AcceptQMuxOptions {
  /** The peer's address as host:port. */
  readonly remote: string;
  /** Our transport parameters (tests and tuning). */
  readonly params?: Partial<TransportParams>;
  /** Socket bytes in flight above which writes wait. */
  readonly highWater?: number;
  /** Ends a session whose peer sent no transport parameters within this many ms (default none). */
  readonly setupTimeoutMs?: number;
  /** Timers for the setup deadline (tests). */
  readonly timers?: Timers;
}

/**
 * Upgrades `req` to a WebSocket speaking `subprotocol` (one the client
 * offered, from `selectSubprotocol`) and runs a QMux server session on it.
 * Return `response` from the HTTP handler; the session starts once it went
 * out.
 *
 * @example
 * ```ts
 * Deno.serve((req, info) => {
 *   const subprotocol = selectSubprotocol(req.headers.get("sec-websocket-protocol"), VERSIONS);
 *   if (!isWebSocketUpgrade(req) || !subprotocol) return new Response(null, { status: 400 });
 *   const { response, session } = acceptQMux(req, subprotocol, { remote: "peer" });
 *   handle(session);
 *   return response;
 * });
 * ```
 */
export function acceptQMux(
  req: Request,
  subprotocol: string,
  options: AcceptQMuxOptions,
): { response: Response; session: QMuxSession } {
  const { format } = parseSubprotocol(subprotocol);
  // Where QMux keeps the session alive itself (QX_PING, qmux-01 and later), Deno's WebSocket
  // ping timeout (30 s by default) is turned off: it only repeated that check, and in Deno 2.9 a
  // message that arrives while its ping is still being written leaves a timer armed that later
  // closes a session that answered every ping (1001 "No response from ping frame."). qmux-00 and
  // the legacy form have no QX_PING: Deno's ping is their only liveness check.
  const keptAlive = usesRecords(format) &&
    sessionParams(options.params, format).maxIdleTimeout > 0;
  const { socket, response } = Deno.upgradeWebSocket(req, {
    protocol: subprotocol,
    ...(keptAlive ? { idleTimeout: 0 } : {}),
  });
  const session = new QMuxSession(socket, {
    role: "server",
    subprotocol,
    url: new URL(req.url),
    remote: options.remote,
    ...(options.params ? { params: options.params } : {}),
    ...(options.highWater !== undefined ? { highWater: options.highWater } : {}),
    ...(options.setupTimeoutMs !== undefined ? { setupTimeoutMs: options.setupTimeoutMs } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
  });
  return { response, session };
}
