import type { RelayMetrics } from "../metrics/mod.ts";
import type { TrackDistributor } from "./distributor.ts";

/**
 * Registers the live gauges of the relay's tracks with the metrics
 * registry: at each scrape they are made again from `distributors`.
 */
export function collectTrackGauges(
  m: RelayMetrics,
  distributors: () => Iterable<TrackDistributor>,
): void {
  m.registry.onCollect(() => {
    m.trackSubscriptionsActive.clear();
    m.bufferDepthGroups.clear();
    m.bufferBytes.clear();
    let subs = 0;
    let fills = 0;
    for (const d of distributors()) {
      subs += d.subscriberCount;
      fills += d.fillsInflight;
      m.trackSubscriptionsActive.add({ path: `/${d.path}`, track: d.track }, d.subscriberCount);
      m.bufferDepthGroups.add({ track: d.trackLabel }, d.depth);
      m.bufferBytes.add({ track: d.trackLabel }, d.producer.cachedBytes);
    }
    m.subscribersActive.set({}, subs);
    m.groupFillsInflight.set({}, fills);
  });
}

/** A track no longer served leaves /metrics: its series go with its distributor. */
export function forgetTrackSeries(m: RelayMetrics, d: TrackDistributor): void {
  const labels = { path: `/${d.path}`, track: d.track };
  m.trackUpstreamRequestsTotal.remove(labels);
  m.trackUpstreamRequestErrorsTotal.remove(labels);
  m.trackUpstreamRequestDurationSeconds.remove(labels);
  m.trackDistributorReusesTotal.remove(labels);
  m.ingressBytesTotal.remove({ track: d.trackLabel });
  m.egressBytesTotal.remove({ track: d.trackLabel });
  m.groupDeliverySeconds.remove({ track: d.trackLabel });
}
