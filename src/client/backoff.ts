/**
 * The client's retry schedules, one per kind of retry. Every one doubles
 * up to a cap with full jitter (each wait drawn from 0 up to the doubled
 * wait), so that many clients that failed together (a relay restart, an
 * outage of the token backend) do not come back together.
 */
import { Backoff } from "../timers/mod.ts";

/** Dialing a MoQ server again, and retrying a failed HTTP read or POST: 250 ms doubling up to 2 s. */
export function retryBackoff(random?: () => number): Backoff {
  return new Backoff({ baseMs: 250, capMs: 2_000, jitter: "full", ...(random ? { random } : {}) });
}

/** Asking a failing token function again: 1 s doubling up to 30 s. */
export function tokenBackoff(random?: () => number): Backoff {
  return new Backoff({
    baseMs: 1_000,
    capMs: 30_000,
    jitter: "full",
    ...(random ? { random } : {}),
  });
}

/** Reading the ledger while no MoQ subscription is up: 1 s doubling up to 5 s. */
export function pollBackoff(random?: () => number): Backoff {
  return new Backoff({
    baseMs: 1_000,
    capMs: 5_000,
    jitter: "full",
    ...(random ? { random } : {}),
  });
}

/** Parking the long-poll again after it failed (the funnel down or refusing): 1 s doubling up to 10 s. */
export function followBackoff(random?: () => number): Backoff {
  return new Backoff({
    baseMs: 1_000,
    capMs: 10_000,
    jitter: "full",
    ...(random ? { random } : {}),
  });
}
