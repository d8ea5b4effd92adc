import type { ListenAddress } from "../config/mod.ts";
import { type RunningServer, startHttpServer, streamResponse } from "../http/mod.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../metrics/mod.ts";

/** FUNNEL_METRICS_ADDR: `/metrics` on an address of its own, so it can stay internal. */
export function startMetricsServer(
  address: ListenAddress,
  render: () => Iterable<string>,
): Promise<RunningServer> {
  return startHttpServer(async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method !== "GET" || path !== "/metrics") {
      return new Response("Only GET /metrics is served here\n", { status: 404 });
    }
    return await streamResponse(render(), {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
    });
  }, { hostname: address.hostname, port: address.port });
}
