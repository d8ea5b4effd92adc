import { MoqCode } from "./errors.ts";
import { systemTimers, type Timers } from "../timers/mod.ts";
import type { MoqPeer } from "./peer.ts";

/** A session's credential lease: ends the session when the credential expires. */
export interface SessionLease {
  /** True once the credential expired and the session was closed for it. */
  readonly expired: boolean;
  /** Stops the timer (the session ended first). */
  stop(): void;
}

/**
 * The session lives no longer than its credential (spec: "the relay session
 * ends when it does"); the client is expected to redial with a fresh one.
 * The relay's sessions and the funnel's own listener share it. `credential`
 * undefined (auth off) means no lease; `expiresAt` is in seconds since the
 * epoch, `now` in milliseconds. `log` is told the line that says why.
 */
export function startLease(
  moq: MoqPeer,
  credential: { readonly expiresAt: number } | undefined,
  now: () => number,
  log: (line: string) => void,
  timers: Timers = systemTimers,
): SessionLease {
  const leaseMs = credential ? credential.expiresAt * 1000 - now() : Infinity;
  const lease = {
    expired: false,
    stop: () => void (timer !== undefined && timers.clearTimeout(timer)),
  };
  const timer = Number.isFinite(leaseMs)
    ? timers.setTimeout(() => {
      lease.expired = true;
      log(`session ${moq.remote} ended: its credential expired`);
      moq.close(MoqCode.Unauthorized, "credential expired");
    }, Math.max(0, leaseMs))
    : undefined;
  return lease;
}
