/** Racing transports: the preferred one gets a head start, the first to open is kept. */
import { errorText } from "../error_text/mod.ts";
import { systemTimers, type Timers } from "../timers/mod.ts";
import type { Session } from "../transport/mod.ts";

/**
 * Dials `attempts` in order of preference: each gets `headStartMs` (or
 * until it fails) before the next starts too. Resolves with the first
 * session to open and closes any that open after it; rejects, naming every
 * failure, when all fail.
 */
export function firstToOpen(
  attempts: readonly (() => Promise<Session>)[],
  headStartMs: number,
  timers: Timers = systemTimers,
): Promise<Session> {
  return new Promise((resolve, reject) => {
    let next = 0;
    let pending = 0;
    let won = false;
    let timer: unknown;
    const errors: unknown[] = [];
    const start = (): void => {
      if (won || next >= attempts.length) return;
      const attempt = attempts[next++]!;
      pending++;
      if (next < attempts.length) timer = timers.setTimeout(start, headStartMs);
      Promise.resolve().then(attempt).then((session) => {
        pending--;
        if (won) return session.close(0, "another transport opened first");
        won = true;
        if (timer !== undefined) timers.clearTimeout(timer);
        resolve(session);
      }, (err) => {
        pending--;
        errors.push(err);
        if (won) return;
        if (next < attempts.length) {
          if (timer !== undefined) timers.clearTimeout(timer);
          start();
        } else if (pending === 0) {
          reject(
            errors.length === 1
              ? err
              : new Error(`Cannot open a session: ${errors.map(errorText).join("; ")}`, {
                cause: errors[0],
              }),
          );
        }
      });
    };
    start();
  });
}
