/**
 * A bound on every storage call: a backend that accepts connections and
 * never answers (a hung database, a black-holed object store) would
 * otherwise hold each request forever. Past the deadline the call fails as
 * `LedgerError("unavailable")`, so the funnel answers 503 with Retry-After,
 * and the backend is told to drop connections the call may be stuck in.
 */
import type { LedgerBackend, TrackBackend } from "./backend.ts";
import { LedgerError } from "./errors.ts";
import type { TrackPath } from "../record/mod.ts";
import { Deadlines, systemTimers, type Timers } from "../timers/mod.ts";

/** How long one storage call may take before it counts as unavailable, ms. */
export const STORAGE_DEADLINE_MS = 5000;

/**
 * Wraps `backend` so each call settles within `ms`: its own outcome, or
 * `LedgerError("unavailable")` once `ms` pass (the call itself may still
 * finish later; the ledger above re-reads the tail before its next commit).
 * `timers` and `now` (milliseconds) must keep the same time.
 */
export function withDeadline(
  backend: LedgerBackend,
  ms: number = STORAGE_DEADLINE_MS,
  timers: Timers = systemTimers,
  now: () => number = () => performance.now(),
): LedgerBackend {
  // Every commit has a deadline: one shared timer instead of one per call,
  // which cost about a sixth of a POST's JavaScript time (memory ledger).
  const deadlines = new Deadlines({ timers, now });
  const bound = <T>(what: string, call: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let late = false;
      const cancel = deadlines.add(ms, () => {
        late = true;
        backend.abandon?.();
        reject(
          new LedgerError(
            "unavailable",
            `The ${backend.name} ledger did not answer ${what} within ${ms / 1000} s`,
          ),
        );
      });
      call().then(
        (value) => {
          if (late) return;
          cancel();
          resolve(value);
        },
        (error) => {
          if (late) return;
          cancel();
          reject(error);
        },
      );
    });
  const track = (t: TrackBackend): TrackBackend => ({
    append: (entries) => bound("a commit", () => t.append(entries)),
    latest: () => bound("a read", () => t.latest()),
    readBefore: (before, limit) => bound("a read", () => t.readBefore(before, limit)),
    readAfter: (after, limit) => bound("a read", () => t.readAfter(after, limit)),
    get: (seq) => bound("a read", () => t.get(seq)),
    erasePayload: (seq) => bound("a redaction", () => t.erasePayload(seq)),
    first: () => bound("a read", () => t.first()),
    // Retention removes in bounded steps; each step is bounded, not the whole pass.
    trim: (before) => t.trim(before),
    ...(t.remove ? { remove: (seqs: readonly number[]) => t.remove!(seqs) } : {}),
    ...(t.commit
      ? {
        commit: (drafts, wallclock, gate) =>
          bound("a commit", () => t.commit!(drafts, wallclock, gate)),
      }
      : {}),
    ...(t.redactOnce
      ? {
        redactOnce: (seq, sender, wallclock) =>
          bound("a redaction", () => t.redactOnce!(seq, sender, wallclock)),
      }
      : {}),
  });
  const opened = new WeakMap<TrackBackend, TrackBackend>();
  return {
    name: backend.name,
    listTracks: () => bound("the track list", () => backend.listTracks()),
    openTrack: async (path: TrackPath, create: boolean) => {
      const t = await bound("opening a track", () => backend.openTrack(path, create));
      if (!t) return undefined;
      let wrapped = opened.get(t);
      if (!wrapped) opened.set(t, wrapped = track(t));
      return wrapped;
    },
    close: () => backend.close(),
    ...(backend.abandon ? { abandon: () => backend.abandon!() } : {}),
    // Listening is not one call with an answer: it is not bounded.
    ...(backend.follow ? { follow: (events) => backend.follow!(events) } : {}),
    // Held for a whole retention pass: not one call with an answer either.
    ...(backend.exclusive
      ? { exclusive: <T>(name: string, task: () => Promise<T>) => backend.exclusive!(name, task) }
      : {}),
  };
}
