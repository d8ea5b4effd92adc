/**
 * Dialing a QMux session: a WebSocket to a `wss://` URL (or `ws://` on a
 * loopback address, for development) offering the application's protocols
 * over each QMux draft, newest first.
 *
 * Deno's WebSocket client reports a refused handshake's HTTP status only
 * for `ws://`; for `wss://` its error names no status, so
 * {@linkcode QMuxConnectError.status} is then undefined.
 */
import { errorText } from "../../errors/mod.ts";
import { formatAddr } from "../address.ts";
import type { Session } from "../session.ts";
import { QMuxConnectError } from "./errors.ts";
import type { TransportParams } from "./params.ts";
import { QMuxSession } from "./session.ts";
import { QMUX_DRAFTS, type QMuxDraft, subprotocolOffer } from "./subprotocol.ts";

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
  /** Give up when the WebSocket is not open within this time (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
  /** Our transport parameters (tests and tuning). */
  readonly params?: Partial<TransportParams>;
  /** Socket bytes in flight above which writes wait. */
  readonly highWater?: number;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

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
  if (url.protocol !== "wss:" && url.protocol !== "ws:") {
    throw new TypeError(`Cannot open QMux to "${url.href}": the scheme must be wss or ws`);
  }
  if (url.protocol === "ws:" && !LOOPBACK.test(url.hostname)) {
    throw new TypeError(
      `Cannot open QMux to "${url.href}": ws:// is only for loopback addresses, use wss://`,
    );
  }
  const offer = subprotocolOffer(options.protocols, options.drafts ?? QMUX_DRAFTS);
  const init: WebSocketOptions & { client?: Deno.HttpClient } = { protocols: offer };
  if (options.origin !== undefined) init.headers = { origin: options.origin };
  const client = options.caCerts?.length
    ? Deno.createHttpClient({ caCerts: [...options.caCerts] })
    : undefined;
  if (client) init.client = client;
  const ws = new WebSocket(url, init);
  try {
    await opened(ws, url, options.timeoutMs ?? 10_000, options.signal);
  } finally {
    client?.close();
  }
  if (!offer.includes(ws.protocol)) {
    ws.close(1002, "Unexpected subprotocol");
    throw new QMuxConnectError(
      `Cannot open QMux to "${url.href}": the server chose subprotocol "${ws.protocol}", which was not offered`,
    );
  }
  const port = url.port || (url.protocol === "wss:" ? "443" : "80");
  return new QMuxSession(ws, {
    role: "client",
    subprotocol: ws.protocol,
    url: new URL(url.href),
    remote: formatAddr({
      transport: "tcp",
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(port),
    }),
    ...(options.params ? { params: options.params } : {}),
    ...(options.highWater !== undefined ? { highWater: options.highWater } : {}),
  });
}

function opened(
  ws: WebSocket,
  url: URL,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure = "";
    const giveUp = (why: string) => {
      ws.close();
      reject(new QMuxConnectError(`Cannot open QMux to "${url.href}": ${why}`));
    };
    const timer = setTimeout(() => giveUp(`no answer within ${timeoutMs} ms`), timeoutMs);
    const onAbort = () => {
      clearTimeout(timer);
      giveUp("the dial was abandoned");
    };
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, { once: true });
    ws.addEventListener("error", (e) => {
      failure = errorText((e as ErrorEvent).error ?? (e as ErrorEvent).message);
    }, { once: true });
    ws.addEventListener("close", () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      const status = /status code: (\d{3})/.exec(failure)?.[1];
      reject(
        new QMuxConnectError(
          `Cannot open QMux to "${url.href}": ${
            failure || "the WebSocket closed during the handshake"
          }`,
          status === undefined ? undefined : Number(status),
        ),
      );
    }, { once: true });
  });
}
