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
  const { socket, response } = Deno.upgradeWebSocket(req, { protocol: subprotocol });
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
