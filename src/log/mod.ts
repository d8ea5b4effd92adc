/**
 * A small leveled logger writing one line per event to stderr, so stdout
 * stays free for command output such as the startup summary.
 *
 * @module
 */
import { errorStack } from "../error_text/mod.ts";

/** Log levels, most severe first. */
export type LogLevel = "error" | "warn" | "info" | "debug";

/** Where services write their log lines. */
export interface Logger {
  /** Something failed and was contained. */
  error(message: string, error?: unknown): void;
  /** Something an operator should look at. */
  warn(message: string): void;
  /** Normal lifecycle events. */
  info(message: string): void;
  /** Detail for debugging. */
  debug(message: string): void;
}

const ORDER: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** A logger that prints `time level [component] message` at or above `level`. */
export function consoleLogger(component: string, level: LogLevel = "info"): Logger {
  const write = (at: LogLevel, message: string, error?: unknown): void => {
    if (ORDER[at] > ORDER[level]) return;
    const detail = error === undefined ? "" : `: ${errorStack(error)}`;
    console.error(`${new Date().toISOString()} ${at} [${component}] ${message}${detail}`);
  };
  return {
    error: (message, error) => write("error", message, error),
    warn: (message) => write("warn", message),
    info: (message) => write("info", message),
    debug: (message) => write("debug", message),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
};

export { type LogRateOptions, type RateLimitedLog, rateLimitedLog } from "./rate_limit.ts";
