import { MoqCode, type MoqSession } from "../../moq/mod.ts";
import type { Grant } from "../../auth/mod.ts";

/** A session's credential lease: ends the session when the credential expires. */
export interface SessionLease {
  /** True once the credential expired and the session was closed for it. */
  readonly expired: boolean;
  /** Stops the timer (the session ended first). */
  stop(): void;
}

/**
 * The session lives no longer than its credential (spec: "the relay session
 * ends when it does"); the publisher is expected to redial with a fresh one.
 * No grant (auth off) means no lease.
 */
export function startLease(
  moq: MoqSession,
  grant: Grant | undefined,
  now: () => number,
  log: (line: string) => void,
): SessionLease {
  const leaseMs = grant ? grant.expiresAt * 1000 - now() : Infinity;
  const lease = { expired: false, stop: () => clearTimeout(timer) };
  const timer = Number.isFinite(leaseMs)
    ? setTimeout(() => {
      lease.expired = true;
      log(`relay: session ${moq.remote} ended: its credential expired`);
      moq.close(MoqCode.Unauthorized, "credential expired");
    }, Math.max(0, leaseMs))
    : undefined;
  return lease;
}
