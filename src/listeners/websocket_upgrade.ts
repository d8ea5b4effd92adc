import type { Session } from "../transport/mod.ts";
import {
  acceptQMux,
  type AcceptQMuxOptions,
  isWebSocketUpgrade,
  parseSubprotocol,
  selectSubprotocol,
} from "../transport/mod.ts";
import type { AdmitWebTransport, WebTransportRequest } from "../transport/mod.ts";
import { formatAddr } from "../transport/mod.ts";
import { problemResponse } from "../http/mod.ts";

/**
 * The largest WebSocket message Deno receives, bytes. Deno buffers a whole
 * message before JavaScript sees any of it and has no option to lower this
 * (denoland/deno#15809), so each connection can make the process hold this
 * much however small our own record limit is.
 */
export const DENO_WEBSOCKET_MAX_MESSAGE = 64 << 20;

/**
 * Upgraded sessions that may be setting up at once (default), so what
 * connections that have not yet sent their first message can make Deno
 * hold stays under 8 × {@linkcode DENO_WEBSOCKET_MAX_MESSAGE} = 512 MiB.
 */
export const MAX_SETTING_UP = 8;

/** How long an upgraded session may take to send its transport parameters, ms (default). */
export const SETUP_TIMEOUT_MS = 5_000;

/** Options of {@link qmuxUpgrade}. */
export interface QMuxUpgradeOptions {
  /** The application protocols served, most preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** The same admission as WebTransport's (path, `jwt`, Origin). */
  readonly admit: AdmitWebTransport;
  /** Receives each accepted session (transport "websocket"). */
  readonly onSession: (session: Session) => void;
  /**
   * Upgraded sessions that may be setting up (no transport parameters yet)
   * at once; upgrades beyond it are refused with 503 before the upgrade
   * (default {@linkcode MAX_SETTING_UP}).
   */
  readonly maxSettingUp?: number;
  /**
   * A session that sent no transport parameters within this many ms is
   * closed (default {@linkcode SETUP_TIMEOUT_MS}), so a peer cannot hold a
   * setting-up place for long.
   */
  readonly setupTimeoutMs?: number;
  /** Transport tuning (tests). */
  readonly qmux?: Omit<AcceptQMuxOptions, "remote">;
}

/**
 * Answers WebSocket upgrades with QMux sessions, admitted exactly like
 * WebTransport: the subprotocol is picked in our preference order (400 when
 * none is acceptable), then `admit` sees the URL, the Origin and the chosen
 * application protocol and may refuse (401, 403, 404 …) before the upgrade.
 * Refusals are problem+json. Requests that are not upgrades get 400.
 *
 * Deno holds a whole WebSocket message (up to
 * {@linkcode DENO_WEBSOCKET_MAX_MESSAGE}) before our record-size check sees
 * it, so the sessions still setting up (upgraded, no transport parameters
 * yet) are bounded in number: past `maxSettingUp` an upgrade is answered 503
 * with `Retry-After`, and each has `setupTimeoutMs` to send its parameters.
 * An oversized first message ends its session with 1009 once it arrived.
 *
 * @example
 * ```ts
 * const upgrade = qmuxUpgrade({ protocols: VERSIONS, admit, onSession: (s) => serve(s) });
 * Deno.serve((req, info) => isWebSocketUpgrade(req) ? upgrade(req, info) : other(req));
 * ```
 */
export function qmuxUpgrade(
  options: QMuxUpgradeOptions,
): (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Promise<Response> {
  const maxSettingUp = options.maxSettingUp ?? MAX_SETTING_UP;
  let settingUp = 0;
  return async (request, info) => {
    if (!isWebSocketUpgrade(request)) {
      return problemResponse(400, "Expected a WebSocket upgrade (GET with Upgrade: websocket)");
    }
    const offered = request.headers.get("sec-websocket-protocol");
    const subprotocol = selectSubprotocol(offered, options.protocols);
    if (subprotocol === undefined) {
      return problemResponse(
        400,
        `No acceptable Sec-WebSocket-Protocol in "${offered ?? ""}"; this server speaks ` +
          `qmux-02, qmux-01 or qmux-00 with ${options.protocols.join(", ")}`,
      );
    }
    const url = new URL(request.url);
    const remote = formatAddr(info.remoteAddr);
    const admission = await options.admit(webTransportRequest(request, url, remote, subprotocol));
    if (admission.status !== 200) {
      return problemResponse(admission.status, admission.reason ?? "Session refused");
    }
    // Counted after admission's await, so concurrent upgrades cannot all pass one check.
    if (settingUp >= maxSettingUp) {
      return problemResponse(
        503,
        `Too many WebSocket sessions are setting up (${maxSettingUp}); try again shortly`,
        { "retry-after": "1" },
      );
    }
    const { response, session } = acceptQMux(request, subprotocol, {
      setupTimeoutMs: options.setupTimeoutMs ?? SETUP_TIMEOUT_MS,
      ...options.qmux,
      remote,
    });
    settingUp++;
    session.established.then(() => settingUp--);
    options.onSession(session);
    return response;
  };
}

/** The WebTransport admission's view of an upgrade request, offering the chosen protocol. */
function webTransportRequest(
  request: Request,
  url: URL,
  remote: string,
  subprotocol: string,
): WebTransportRequest {
  return {
    method: request.method,
    url,
    path: url.pathname,
    query: url.searchParams,
    origin: request.headers.get("origin") ?? undefined,
    protocols: [parseSubprotocol(subprotocol).protocol],
    headers: [...request.headers],
    remote,
  };
}
