import type { LedgerEntry, NanoClock, TrackPath } from "../../ledger/mod.ts";
import type { RecordSink } from "../sink.ts";
import type { FunnelMetrics } from "./funnel_metrics.ts";

/**
 * `sink`, timing each committed entry's hand-over against its commit time
 * (`wallclock`, on the same clock as `now` in this process; for an entry
 * another process committed, on that host's clock).
 */
export function meteredSink(
  sink: RecordSink,
  label: "relay" | "listener",
  metrics: FunnelMetrics,
  now: NanoClock,
): RecordSink {
  const lag = metrics.publishLagSeconds.bind({ sink: label });
  return {
    trackCreated: (path: TrackPath, newest: LedgerEntry | undefined) =>
      sink.trackCreated(path, newest),
    committed: (path: TrackPath, entries: readonly LedgerEntry[]) => {
      sink.committed(path, entries);
      const at = now();
      for (const entry of entries) lag(Math.max(0, Number(at - entry.wallclock) / 1e9));
    },
  };
}
