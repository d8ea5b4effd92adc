import type { FunnelMetrics } from "./funnel_metrics.ts";

/** A request handler of `Deno.serve`. */
export type Handler = (
  request: Request,
  info: { remoteAddr: Deno.NetAddr },
) => Response | Promise<Response>;

/** The `route` label of a request: what it does, never its path (tracks are unbounded). */
export function routeOf(method: string, url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  const path = start < 0 ? "/" : url.slice(start);
  if (path.startsWith("/tracks/")) {
    switch (method) {
      case "POST":
        return "post";
      case "PUT":
        return "put";
      case "GET":
        return "history";
      case "DELETE":
        return "redact";
    }
    return "other";
  }
  if (path === "/health" || path.startsWith("/health?")) return "health";
  if (path === "/metrics" || path.startsWith("/metrics?")) return "metrics";
  return "other";
}

/**
 * Counts every answer by route and status, times POSTs that stored a record
 * (arrival to durable: the 201 is made right after the commit), and counts
 * replays by their `idempotent-replayed` header.
 */
export function meteredHandler(handler: Handler, metrics: FunnelMetrics): Handler {
  const posted = metrics.requestsTotal.bind({ route: "post", status: "201" });
  const latency = metrics.commitLatencySeconds.bind({});
  const replays = metrics.idempotentReplaysTotal.bind({});
  const count = (route: string, started: number, response: Response): Response => {
    if (route === "post" && response.status === 201) {
      posted();
      if (response.headers.has("idempotent-replayed")) replays();
      else latency((performance.now() - started) / 1000);
    } else {
      metrics.requestsTotal.inc({ route, status: String(response.status) });
    }
    return response;
  };
  return (request, info) => {
    const started = performance.now();
    const route = routeOf(request.method, request.url);
    const answer = handler(request, info);
    return answer instanceof Response
      ? count(route, started, answer)
      : answer.then((r) => count(route, started, r));
  };
}
