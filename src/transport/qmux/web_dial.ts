/**
 * Dialing QMux with the runtime's standard WebSocket (a browser's). It takes
 * no TLS options: the server's certificate must be one the runtime trusts.
 * Uses only the WHATWG WebSocket API, so a browser bundle carries no Deno API.
 */
import { errorText, redactUrl } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { Session } from "../session.ts";
import { checkQMuxUrl, type QMuxClientOptions, qmuxClientSession } from "./client_session.ts";
import { QMuxConnectError } from "./errors.ts";
import { webSocketSocket } from "./socket.ts";
import { QMUX_DRAFTS, type QMuxDraft, subprotocolOffer } from "./subprotocol.ts";

/** Options of {@linkcode connectQMuxWeb}. */
export interface ConnectQMuxWebOptions extends QMuxClientOptions {
  /** The application's protocols, preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** QMux drafts to offer, preferred first (default qmux-02, qmux-01, qmux-00). */
  readonly drafts?: readonly QMuxDraft[];
  /** Give up when the WebSocket is not open within this time (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
}

/**
 * Opens a QMux session over the standard `WebSocket` to a `wss://` URL
 * (`ws://` on loopback). Rejects with {@linkcode QMuxConnectError} when the
 * handshake fails, times out or is abandoned, or the server picks a
 * subprotocol that was not offered.
 *
 * @example
 * ```ts
 * const session = await connectQMuxWeb(new URL("wss://relay.example:4433/"), {
 *   protocols: ["moq-lite-05", "moq-lite-04"],
 * });
 * ```
 */
export async function connectQMuxWeb(url: URL, options: ConnectQMuxWebOptions): Promise<Session> {
  checkQMuxUrl(url);
  const offer = subprotocolOffer(options.protocols, options.drafts ?? QMUX_DRAFTS);
  const ws = new WebSocket(url.href, [...offer]);
  await opened(
    ws,
    url,
    options.timeoutMs ?? 10_000,
    options.signal,
    options.timers ?? systemTimers,
  );
  if (!offer.includes(ws.protocol)) {
    ws.close(1002, "Unexpected subprotocol");
    throw new QMuxConnectError(
      `Cannot open QMux to "${
        redactUrl(url)
      }": the server chose subprotocol "${ws.protocol}", which was not offered`,
    );
  }
  return qmuxClientSession(webSocketSocket(ws), ws.protocol, url, options);
}

/** Resolves once `ws` is open; rejects when it closes first, times out, or `signal` aborts. */
function opened(
  ws: WebSocket,
  url: URL,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  timers: Timers,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure = "";
    const fail = (why: string) => {
      cleanup();
      try {
        ws.close();
      } catch {
        // already closing
      }
      reject(new QMuxConnectError(`Cannot open QMux to "${redactUrl(url)}": ${why}`));
    };
    const timer = timers.setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
    const onAbort = () => fail("the dial was abandoned");
    const onOpen = () => {
      cleanup();
      resolve();
    };
    const onError = (e: Event) => {
      failure = errorText((e as ErrorEvent).error ?? (e as ErrorEvent).message ?? "");
    };
    const onClose = () => fail(failure || "the WebSocket closed during the handshake");
    const cleanup = () => {
      timers.clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      ws.removeEventListener("open", onOpen);
      ws.removeEventListener("error", onError);
      ws.removeEventListener("close", onClose);
    };
    ws.addEventListener("open", onOpen);
    ws.addEventListener("error", onError);
    ws.addEventListener("close", onClose);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}
