import type { CommitReader, NanoClock } from "../../ledger/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { errorCounter } from "./counted_errors.ts";
import type { FunnelMetrics } from "./funnel_metrics.ts";

/**
 * `reader` (a live destination: the relay session's tracks or the own
 * listener), timing each committed entry's hand-over to it against its
 * commit time (`wallclock`, on the same clock as `now` in this process; for
 * an entry another process committed, on that host's clock).
 */
export function meteredReader(
  reader: Required<Pick<CommitReader, "trackCreated" | "committed" | "tracksStored">>,
  label: "relay" | "listener",
  metrics: FunnelMetrics,
  now: NanoClock,
): CommitReader {
  const lag = metrics.publishLagSeconds.bind({ sink: label });
  return {
    trackCreated: (path, newest) => reader.trackCreated(path, newest),
    tracksStored: (paths) => reader.tracksStored(paths),
    committed: (path, entries, info) => {
      const told = reader.committed(path, entries, info);
      const at = now();
      for (const entry of entries) lag(Math.max(0, Number(at - entry.wallclock) / 1e9));
      return told;
    },
  };
}

/**
 * The ledger's commits counted: records this process committed and their
 * batches, records learned from other processes (shared ledgers), and
 * failures to follow those, which are also logged.
 */
export function commitCounter(metrics: FunnelMetrics, log: Logger): CommitReader {
  const countError = errorCounter(metrics);
  return {
    committed: (_path, entries, { learned }) => {
      const own = entries.length - learned;
      if (own > 0) {
        metrics.recordsCommittedTotal.inc({}, own);
        metrics.commitBatchRecords.observe({}, own);
      }
      if (learned > 0) metrics.recordsLearnedTotal.inc({}, learned);
    },
    followFailed: (error) => {
      countError(error);
      log.warn(`Reading other funnels' commits failed (retrying): ${(error as Error).message}`);
    },
  };
}
