/**
 * What a QMux session needs of a WebSocket: binary messages both ways, how
 * much it has not yet written, and close. Deno's own WebSocket (the server
 * side, from `Deno.upgradeWebSocket`) is adapted here; the dialer has its
 * own client (`ws_client.ts`).
 */
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { MessageSink } from "./scheduler.ts";

/** What the socket tells its session. */
export interface SocketEvents {
  /** The socket can send now (servers: once the upgrade response went out). */
  open(): void;
  /** A message arrived: bytes for binary, a string for text. */
  message(data: Uint8Array | string): void;
  /** The socket is gone, with the WebSocket close code and reason. */
  close(code: number, reason: string): void;
}

/** A message-oriented socket carrying one QMux session. */
export interface MessageSocket extends MessageSink {
  /** Starts delivering events (once). */
  listen(events: SocketEvents): void;
  /** Sends a close frame (best effort) and ends the connection. */
  close(code: number, reason: string): void;
}

/**
 * How long a closing socket waits for the peer's close frame before it lets
 * the connection go (as our client does).
 */
export const CLOSE_TIMEOUT_MS = 1000;

/** Options of {@linkcode webSocketSocket}. */
export interface WebSocketSocketOptions {
  /** Wait for the peer's close frame, ms (default {@linkcode CLOSE_TIMEOUT_MS}). */
  readonly closeTimeoutMs?: number;
  /** Timer functions (tests). */
  readonly timers?: Timers;
}

/**
 * Deno's WebSocket as a {@linkcode MessageSocket}. Deno's server socket
 * waits for the peer's close frame with no limit once it sent its own (its
 * idle timeout stops while closing), so a peer that never answers would
 * keep the TCP connection, and this session with it, for as long as it
 * likes: after `closeTimeoutMs` the connection is released.
 */
export function webSocketSocket(
  ws: WebSocket,
  options: WebSocketSocketOptions = {},
): MessageSocket {
  const timers = options.timers ?? systemTimers;
  let closeTimer: unknown;
  let gone = false;
  ws.addEventListener("close", () => {
    gone = true;
    if (closeTimer !== undefined) timers.clearTimeout(closeTimer);
  });
  return {
    get open() {
      return ws.readyState === WebSocket.OPEN;
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    send: (message) => ws.send(message),
    close: (code, reason) => {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
      if (gone || closeTimer !== undefined) return;
      closeTimer = timers.setTimeout(
        () => releaseWebSocket(ws),
        options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS,
      );
    },
    listen(events) {
      ws.binaryType = "arraybuffer";
      ws.addEventListener("open", () => events.open());
      ws.addEventListener("message", (e) => {
        const data: unknown = e.data;
        events.message(data instanceof ArrayBuffer ? new Uint8Array(data) : String(data));
      });
      ws.addEventListener("close", (e) => events.close(e.code, e.reason));
    },
  };
}

/**
 * Closes a WebSocket's connection without waiting for the peer, as Deno
 * itself does when a ping goes unanswered: WebSocket has no public way to
 * give up on a close handshake, so this closes its resource. Returns false
 * where the runtime offers no such handle (the socket then stays until the
 * peer or the TCP connection ends it).
 */
export function releaseWebSocket(ws: WebSocket): boolean {
  const deno = Deno as unknown as Record<string | symbol, unknown>;
  const key = deno.internal;
  const internal: unknown = typeof key === "symbol" ? deno[key] : undefined;
  const core = (internal as { core?: { tryClose?: unknown } } | undefined)?.core;
  const rid = Object.getOwnPropertySymbols(ws).find((s) => s.description === "[[rid]]");
  if (typeof core?.tryClose !== "function" || rid === undefined) return false;
  const id: unknown = (ws as unknown as Record<symbol, unknown>)[rid];
  if (typeof id !== "number") return false;
  (core.tryClose as (rid: number) => void)(id);
  return true;
}
