import { LedgerError } from "../../ledger/mod.ts";
import { RateLimitedError } from "../errors.ts";
import type { FunnelMetrics } from "./funnel_metrics.ts";

/** Counts a failure a request met (or following other processes' commits met) by what it was. */
export function errorCounter(metrics: FunnelMetrics): (error: unknown) => void {
  return (error) => {
    if (error instanceof RateLimitedError) metrics.rateLimitedTotal.inc({ limit: error.scope });
    else if (error instanceof LedgerError) metrics.ledgerErrorsTotal.inc({ kind: error.code });
  };
}
