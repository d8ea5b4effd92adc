/**
 * The client end of a QMux session once its WebSocket is open, whoever
 * opened it (our own client in Deno, a browser's WebSocket): the URL rules
 * and the session itself. Uses no Deno API.
 */
import type { Timers } from "../../timers/mod.ts";
import { redactUrl } from "../../error_text/mod.ts";
import { formatAddr } from "../address.ts";
import type { Session } from "../session.ts";
import type { TransportParams } from "./params.ts";
import { QMuxSession } from "./session.ts";
import type { MessageSocket } from "./socket.ts";

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

/** Throws TypeError unless `url` is `wss://`, or `ws://` on a loopback address. */
export function checkQMuxUrl(url: URL): void {
  if (url.protocol !== "wss:" && url.protocol !== "ws:") {
    throw new TypeError(`Cannot open QMux to "${redactUrl(url)}": the scheme must be wss or ws`);
  }
  if (url.protocol === "ws:" && !LOOPBACK.test(url.hostname)) {
    throw new TypeError(
      `Cannot open QMux to "${redactUrl(url)}": ws:// is only for loopback addresses, use wss://`,
    );
  }
}

/** Tuning a client session takes. */
export interface QMuxClientOptions {
  /** Our transport parameters (tests and tuning). */
  readonly params?: Partial<TransportParams>;
  /** Socket bytes in flight above which writes wait. */
  readonly highWater?: number;
  /** Timers of the dial's deadline and the session's waits (default the system's). */
  readonly timers?: Timers;
}

/** Starts the client session on an open `socket` that negotiated `subprotocol` with `url`. */
export function qmuxClientSession(
  socket: MessageSocket,
  subprotocol: string,
  url: URL,
  options: QMuxClientOptions,
): Session {
  const port = url.port || (url.protocol === "wss:" ? "443" : "80");
  return new QMuxSession(socket, {
    role: "client",
    subprotocol,
    url: new URL(url.href),
    remote: formatAddr({
      transport: "tcp",
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(port),
    }),
    ...(options.params ? { params: options.params } : {}),
    ...(options.highWater !== undefined ? { highWater: options.highWater } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
  });
}
