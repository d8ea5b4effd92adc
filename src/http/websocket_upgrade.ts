import type { Session } from "../transport/mod.ts";
import {
  acceptQMux,
  type AcceptQMuxOptions,
  isWebSocketUpgrade,
  parseSubprotocol,
  selectSubprotocol,
} from "../transport/qmux/mod.ts";
import type { AdmitWebTransport, WebTransportRequest } from "../transport/webtransport/mod.ts";
import { formatAddr } from "../transport/address.ts";
import { problemResponse } from "./problem.ts";

/** Options of {@link qmuxUpgrade}. */
export interface QMuxUpgradeOptions {
  /** The application protocols served, most preferred first (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** The same admission as WebTransport's (path, `jwt`, Origin). */
  readonly admit: AdmitWebTransport;
  /** Receives each accepted session (transport "websocket"). */
  readonly onSession: (session: Session) => void;
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
 * @example
 * ```ts
 * const upgrade = qmuxUpgrade({ protocols: VERSIONS, admit, onSession: (s) => serve(s) });
 * Deno.serve((req, info) => isWebSocketUpgrade(req) ? upgrade(req, info) : other(req));
 * ```
 */
export function qmuxUpgrade(
  options: QMuxUpgradeOptions,
): (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Promise<Response> {
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
    const { response, session } = acceptQMux(request, subprotocol, { ...options.qmux, remote });
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
