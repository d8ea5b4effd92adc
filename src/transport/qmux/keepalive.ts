/**
 * QMux idle timeout and keep-alive (qmux-01/02): the effective timeout is
 * the smaller non-zero `max_idle_timeout` of the two sides; a peer silent
 * for that long is gone. We send QX_PING when either direction was quiet
 * for a third of it: our silence would let the peer time out, and the
 * peer's answer proves it is alive even when it has nothing to send.
 */

import { systemTimers, type Timers } from "../../timers/mod.ts";

/** The effective idle timeout in ms (0: none): the smaller non-zero of the two. */
export function effectiveIdleTimeout(ours: number, theirs: number): number {
  if (ours === 0) return theirs;
  if (theirs === 0) return ours;
  return Math.min(ours, theirs);
}

/** Watches a session's traffic; calls `ping` when we are quiet and `idle` when the peer is. */
export class KeepAlive {
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #lastReceived: number;
  #lastSent: number;
  #lastPing: number;
  #timer: unknown;
  readonly #timers: Timers;

  /** Starts watching (a check every sixth of the timeout, at least 50 ms, on `timers`). */
  constructor(
    timeoutMs: number,
    now: () => number,
    ping: () => void,
    idle: () => void,
    timers: Timers = systemTimers,
  ) {
    this.#timeoutMs = timeoutMs;
    this.#now = now;
    this.#timers = timers;
    this.#lastReceived = this.#lastSent = this.#lastPing = now();
    const everyMs = Math.max(50, timeoutMs / 6);
    const check = (): void => {
      this.#timer = undefined;
      const t = this.#now();
      if (t - this.#lastReceived > this.#timeoutMs) {
        this.stop();
        idle();
        return;
      }
      const third = this.#timeoutMs / 3;
      const quiet = t - this.#lastSent > third || t - this.#lastReceived > third;
      if (quiet && t - this.#lastPing > third) {
        this.#lastPing = t;
        ping();
      }
      if (!this.#stopped) this.#timer = this.#timers.setTimeout(check, everyMs);
    };
    this.#timer = this.#timers.setTimeout(check, everyMs);
  }

  #stopped = false;

  /** A message arrived. */
  received(): void {
    this.#lastReceived = this.#now();
  }

  /** A message left. */
  sent(): void {
    this.#lastSent = this.#now();
  }

  /** Stops the timer. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
