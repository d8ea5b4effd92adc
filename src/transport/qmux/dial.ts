/**
 * Dialing a QMux session: a WebSocket to a `wss://` URL (or `ws://` on a
 * loopback address, for development) offering the application's protocols
 * over each QMux draft, newest first.
 *
 * The WebSocket client is our own (`ws_client.ts`): it sets TCP_NODELAY and
 * reports the HTTP status of a refused handshake in
 * {@linkcode QMuxConnectError.status}.
 */
import { errorText, redactUrl } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { Session } from "../session.ts";
import { checkQMuxUrl, qmuxClientSession } from "./client_session.ts";
import { QMuxConnectError } from "./errors.ts";
import type { TransportParams } from "./params.ts";
import type { MessageSocket } from "./socket.ts";
import { QMUX_DRAFTS, type QMuxDraft, subprotocolOffer } from "./subprotocol.ts";
import { openWebSocket } from "./ws_client.ts";

/** Options of {@linkcode connectQMux}. */
export interface ConnectQMuxOptions {
  /** The application's protocols, preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** QMux drafts to offer, preferred first (default qmux-02, qmux-01, qmux-00). */
  readonly drafts?: readonly QMuxDraft[];
  /** Extra PEM root certificates to trust (e.g. the relay's CA file contents). */
  readonly caCerts?: readonly string[];
  /** Sent as the `origin` header when set. */
  readonly origin?: string;
  /** TLS server name (and Host) when the URL names an address (default the URL's host). */
  readonly serverName?: string;
  /** Give up when the WebSocket is not open within this time (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
  /** Our transport parameters (tests and tuning). */
  readonly params?: Partial<TransportParams>;
  /** Socket bytes in flight above which writes wait. */
  readonly highWater?: number;
  /** Timers of the dial's deadline, the session's waits and its close (default the system's). */
  readonly timers?: Timers;
}

/**
 * Opens a QMux session over a WebSocket. Rejects with
 * {@linkcode QMuxConnectError} when the handshake fails, times out, or the
 * server picks a subprotocol we did not offer.
 *
 * @example
 * ```ts
 * const session = await connectQMux(new URL("wss://relay.example:4433/live?jwt=..."), {
 *   protocols: VERSIONS, // from src/moq: moq-lite-05, moq-lite-04
 * });
 * console.log(session.transport, session.protocol); // "websocket" "moq-lite-05"
 * ```
 */
export async function connectQMux(url: URL, options: ConnectQMuxOptions): Promise<Session> {
  checkQMuxUrl(url);
  const offer = subprotocolOffer(options.protocols, options.drafts ?? QMUX_DRAFTS);
  const { socket, protocol } = await withDeadline(
    url,
    openWebSocket(url, {
      protocols: offer,
      ...(options.caCerts ? { caCerts: options.caCerts } : {}),
      ...(options.serverName !== undefined ? { serverName: options.serverName } : {}),
      ...(options.origin !== undefined ? { headers: { origin: options.origin } } : {}),
      ...(options.timers ? { timers: options.timers } : {}),
    }),
    options.timeoutMs ?? 10_000,
    options.signal,
    options.timers ?? systemTimers,
  );
  if (!offer.includes(protocol)) {
    socket.close(1002, "Unexpected subprotocol");
    throw new QMuxConnectError(
      `Cannot open QMux to "${
        redactUrl(url)
      }": the server chose subprotocol "${protocol}", which was not offered`,
    );
  }
  return qmuxClientSession(socket, protocol, url, options);
}

/**
 * Settles with `opening`, or rejects after `timeoutMs` or when `signal`
 * aborts; a socket that opens after that is closed, so nothing is left open.
 */
function withDeadline<T extends { socket: MessageSocket }>(
  url: URL,
  opening: Promise<T>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  timers: Timers,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const giveUp = (why: string) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(new QMuxConnectError(`Cannot open QMux to "${redactUrl(url)}": ${why}`));
    };
    const timer = timers.setTimeout(() => giveUp(`no answer within ${timeoutMs} ms`), timeoutMs);
    const onAbort = () => giveUp("the dial was abandoned");
    const cleanup = () => {
      timers.clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    opening.then((opened) => {
      if (settled) return opened.socket.close(1001, "Dial abandoned");
      settled = true;
      cleanup();
      resolve(opened);
    }, (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(
        err instanceof QMuxConnectError
          ? new QMuxConnectError(
            `Cannot open QMux to "${redactUrl(url)}": ${err.message}`,
            err.status,
            {
              cause: err,
            },
          )
          : new QMuxConnectError(
            `Cannot open QMux to "${redactUrl(url)}": ${errorText(err)}`,
            undefined,
            {
              cause: err,
            },
          ),
      );
    });
  });
}
