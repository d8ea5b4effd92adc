import type { FunnelConfig } from "../config/mod.ts";
import {
  type Ledger,
  type LedgerBackend,
  LedgerError,
  openBackend,
  waitForBackend,
  type WaitingBackend,
} from "../ledger/mod.ts";
import type { Logger } from "../log/mod.ts";
import { retryUntilDone } from "../timers/mod.ts";

/**
 * Opens the configured ledger backend. When its storage (PostgreSQL, S3:
 * across the network) cannot be reached, the funnel starts anyway on a backend that keeps
 * trying with backoff ({@link waitForBackend}): until it opens, requests
 * that need the ledger answer 503 and `/health` says "starting". Any other
 * failure (a refused statement, a bad location) still stops the start.
 */
export async function openStorage(
  config: FunnelConfig,
  log: Logger,
): Promise<LedgerBackend | WaitingBackend> {
  const open = () => openBackend(config.ledger, config.storeCredentials);
  try {
    return await open();
  } catch (error) {
    if (!(error instanceof LedgerError) || error.code !== "unavailable") throw error;
    // Only storage across the network comes back by itself: a directory ledger another funnel
    // holds (its writer lock) refuses the start, as one funnel per directory is the rule.
    if (config.ledger.kind !== "postgres" && config.ledger.kind !== "s3") throw error;
    // Refused by the process's own permissions, not the network: waiting would not help.
    const cause = error.cause;
    if (cause instanceof Deno.errors.NotCapable || cause instanceof Deno.errors.PermissionDenied) {
      throw error;
    }
    log.warn(
      `${error.message}; starting anyway and trying again with backoff ` +
        "(requests answer 503 until it is reached)",
    );
    let failures = 0;
    const waiting = waitForBackend(open, {
      name: config.ledger.kind,
      shared: config.ledger.kind === "postgres",
      // Every attempt fails the same way while the storage is away: a line now and then.
      onError: (e) => {
        if (++failures % 10 === 0) {
          log.warn(`Still waiting for the ledger: ${(e as Error).message}`);
        }
      },
    });
    waiting.opened.then(() => log.info("The ledger's storage is reached: the funnel is ready"));
    return waiting;
  }
}

/** Why the funnel is not ready yet (its ledger's storage is still being waited for), or undefined. */
export function notReady(backend: LedgerBackend): string | undefined {
  const waiting = backend as Partial<WaitingBackend>;
  return waiting.ready === false ? `waiting for the ${backend.name} ledger's storage` : undefined;
}

/**
 * The spec's restore ({@link Ledger.restore}: one listing of the store into
 * the commit feed as stored tracks, whose broadcasts the live side announces;
 * each track is opened, its latest record read, when first used). Over a
 * backend still waiting for its storage it runs once that is reached, retried
 * with backoff until a pass succeeds or `signal` aborts.
 */
export async function restoreTracks(
  ledger: Ledger,
  backend: LedgerBackend,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  const pass = (): Promise<void> => ledger.restore();
  const waiting = backend as Partial<WaitingBackend>;
  if (waiting.opened === undefined || waiting.ready) return await pass();
  void waiting.opened.then(() =>
    retryUntilDone(pass, {
      signal,
      onError: (e) => log.warn(`Restoring the tracks failed (retrying): ${(e as Error).message}`),
    })
  );
}
