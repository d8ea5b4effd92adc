/**
 * A token bucket for log lines a remote peer can cause (refused sessions,
 * malformed streams), so a hostile peer cannot flood the log: a burst passes,
 * then a steady rate; what is dropped is counted and reported with the next
 * line that passes.
 */

/** Options of {@link rateLimitedLog}. */
export interface LogRateOptions {
  /** Lines that may pass at once (default 20). */
  readonly burst?: number;
  /** Lines per second once the burst is spent (default 2). */
  readonly perSecond?: number;
  /** Clock in ms (default `performance.now`). */
  readonly now?: () => number;
}

/** A log function that passes lines at a bounded rate; `suppressed` counts the ones it dropped. */
export interface RateLimitedLog {
  /** Writes `line` if the rate allows it. */
  (line: string): void;
  /** Lines dropped so far. */
  readonly suppressed: number;
}

/**
 * Wraps `write` so at most `burst` lines pass at once and `perSecond` after
 * that. The first line to pass after some were dropped says how many.
 *
 * @example
 * ```ts
 * const peerLog = rateLimitedLog((line) => console.error(line), { burst: 20, perSecond: 2 });
 * peerLog("session 10.0.0.1:5000 refused: no credential");
 * ```
 */
export function rateLimitedLog(
  write: (line: string) => void,
  options: LogRateOptions = {},
): RateLimitedLog {
  const burst = options.burst ?? 20;
  const perMs = (options.perSecond ?? 2) / 1000;
  const now = options.now ?? (() => performance.now());
  let tokens = burst;
  let last = now();
  let dropped = 0;
  let total = 0;
  const log = (line: string): void => {
    const t = now();
    tokens = Math.min(burst, tokens + (t - last) * perMs);
    last = t;
    if (tokens < 1) {
      dropped++;
      total++;
      return;
    }
    tokens--;
    if (dropped > 0) {
      write(`${line} (${dropped} similar lines suppressed before this one)`);
      dropped = 0;
    } else {
      write(line);
    }
  };
  Object.defineProperty(log, "suppressed", { get: () => total });
  return log as RateLimitedLog;
}
