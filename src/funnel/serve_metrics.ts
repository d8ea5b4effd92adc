import type { ListenAddress } from "../config/mod.ts";
import { type RunningServer, startHttpServer, streamResponse } from "../http/mod.ts";
import type { NanoClock } from "../ledger/mod.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../metrics/mod.ts";
import type { LiveSide } from "./live/mod.ts";
import { type FunnelMetrics, meteredSink } from "./metrics/mod.ts";
import { fanOut, type RecordSink } from "./sink.ts";

/**
 * The live side's sink with each destination timed: the relay session's
 * tracks (when RELAY_URL is set) and the own listener (when serving).
 */
export function meteredLive(live: LiveSide, metrics: FunnelMetrics, clock: NanoClock): RecordSink {
  const publisher: RecordSink = live.relay
    ? meteredSink(live.publisher, "relay", metrics, clock)
    : live.publisher;
  return live.listener
    ? fanOut(publisher, meteredSink(live.listener, "listener", metrics, clock))
    : publisher;
}

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
