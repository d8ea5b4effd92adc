import { removesRecords, type RetentionConfig } from "../config/mod.ts";
import { type Ledger, type NanoClock, Retention } from "../ledger/mod.ts";
import { trackKey } from "../path/mod.ts";
import type { Logger } from "../log/mod.ts";
import { pinsStream, StreamExpiry } from "../durable_streams/mod.ts";
import { sleep, systemTimers, type Timers } from "../timers/mod.ts";
import type { FunnelMetrics } from "./metrics/mod.ts";

/** A retention loop running in the background; `stop` waits for a pass in progress. */
export interface RetentionLoop {
  /** Stops the loop; resolves once no pass runs. */
  stop(): Promise<void>;
}

/**
 * Runs a retention pass over the ledger every `config.intervalMs` (the first
 * one interval after start), counting what it removed. A pass runs even when
 * every policy keeps everything: expired Durable Streams are removed.
 */
export function startRetentionLoop(
  ledger: Ledger,
  config: RetentionConfig,
  clock: NanoClock,
  metrics: FunnelMetrics,
  log: Logger,
  timers: Timers = systemTimers,
): RetentionLoop {
  const backend = ledger.backend.name;
  const retention = new Retention(ledger, {
    config,
    clock,
    // A Durable Stream's state stays with its track; an append's message count is not state.
    pins: (entry) => pinsStream(entry.meta),
    // An expired Durable Stream is ended and its records go (unless a fork reads them).
    expire: new StreamExpiry(() => Number(clock() / 1_000_000n)),
    onRemoved: (_track, records, bytes) => {
      metrics.retentionRemovedTotal.inc({ backend }, records);
      if (bytes > 0) metrics.retentionRemovedBytesTotal.inc({ backend }, bytes);
    },
    onCompacted: (_track, records) => metrics.compactedRecordsTotal.inc({ backend }, records),
    onError: (path, error) => {
      log.warn(
        `Retention of ${trackKey(path)} failed (retried next pass): ${(error as Error).message}`,
      );
    },
  });
  if (!retention.active) return { stop: () => Promise.resolve() };
  // Stored figures cover the tracks under a policy that removes records: none, no series.
  const counts = removesRecords(config.default) ||
    config.rules.some((rule) => removesRecords(rule.policy));
  const stopping = new AbortController();
  let warnedUncompactable = false;
  const running = (async () => {
    while (!stopping.signal.aborted) {
      await sleep(config.intervalMs, stopping.signal, timers);
      if (stopping.signal.aborted) return;
      try {
        const report = await retention.pass(stopping.signal);
        const outcome = !report ? "skipped" : report.failed > 0 ? "failed" : "done";
        if (report && report.uncompactable > 0 && !warnedUncompactable) {
          warnedUncompactable = true;
          log.warn(
            `The ${backend} ledger cannot compact by key: ${report.uncompactable} track(s) ` +
              `under a compact= rule keep every record`,
          );
        }
        metrics.retentionPassesTotal.inc({ outcome });
        // A pass another funnel ran (skipped here) leaves the figures of the last one.
        if (report && counts) {
          metrics.ledgerStoredRecords.set({ backend }, report.stored.records);
          metrics.ledgerStoredBytes.set({ backend }, report.stored.bytes);
        }
      } catch (error) {
        // The next pass takes up where this one stopped: removal is oldest first.
        metrics.retentionPassesTotal.inc({ outcome: "failed" });
        log.warn(`Retention pass failed (retried next interval): ${(error as Error).message}`);
      }
    }
  })();
  return {
    stop: async () => {
      stopping.abort();
      await running;
    },
  };
}
