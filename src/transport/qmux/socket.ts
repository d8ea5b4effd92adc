/**
 * What a QMux session needs of a WebSocket: binary messages both ways, how
 * much it has not yet written, and close. Deno's own WebSocket (the server
 * side, from `Deno.upgradeWebSocket`) is adapted here; the dialer has its
 * own client (`ws_client.ts`).
 */
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

/** Deno's WebSocket as a {@linkcode MessageSocket}. */
export function webSocketSocket(ws: WebSocket): MessageSocket {
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
