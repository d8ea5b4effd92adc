/**
 * Giving freed native memory back to the system after a burst of sessions.
 *
 * QUIC and TLS state lives outside the JavaScript heap, in the C allocator.
 * When a burst of sessions ends that memory is freed, but glibc keeps the
 * freed pages in its heap, so the process's resident size stays at the
 * burst's peak (measured: a relay after 500 sessions kept about 70 MiB this
 * way). `malloc_trim(0)` returns them. It is reached through FFI, so it runs
 * only when the process may use FFI (`--allow-ffi`) and libc is glibc;
 * otherwise the trimmer does nothing.
 */
import { systemTimers, type Timers } from "../timers/mod.ts";
import { glibc } from "../libc/mod.ts";

/** Returns freed allocator pages to the system; true when some were released. */
export type TrimFunction = () => boolean;

let cached: TrimFunction | null | undefined;

/**
 * glibc's `malloc_trim(0)` through FFI, or undefined when the process may not
 * load libc (see `glibc` in src/libc).
 */
export function glibcTrim(): TrimFunction | undefined {
  if (cached !== undefined) return cached ?? undefined;
  const libc = glibc();
  cached = libc ? () => libc.malloc_trim(0n) === 1 : null;
  return cached ?? undefined;
}

/** Options of {@link startMemoryTrimmer}. */
export interface MemoryTrimOptions {
  /** How often the session count is looked at, ms (default 5 s). */
  readonly intervalMs?: number;
  /** Sessions that must have ended since the peak before a trim (default 64). */
  readonly minDrop?: number;
  /** The trim itself (default {@link glibcTrim}). */
  readonly trim?: TrimFunction;
  /** Timers (tests pass their own). */
  readonly timers?: Timers;
}

/** Watches sessions open and close and trims after a burst has ended. */
export interface MemoryTrimmer {
  /** False when trimming is not possible here (no FFI permission, not glibc). */
  readonly available: boolean;
  /** Trims done so far. */
  readonly trims: number;
  /** Counts `session` as open until its `closed` settles. */
  track(session: { readonly closed: Promise<unknown> }): void;
  /** Stops watching. */
  stop(): void;
}

/**
 * Starts a trimmer: every `intervalMs` it compares the open session count
 * with its peak since the last trim, and trims once at least `minDrop`
 * sessions have gone and none ended during the last interval (a burst
 * ended). Steady churn at a constant count never triggers it: the allocator
 * reuses what it keeps.
 */
export function startMemoryTrimmer(options: MemoryTrimOptions = {}): MemoryTrimmer {
  const trim = options.trim ?? glibcTrim();
  const timers = options.timers ?? systemTimers;
  const intervalMs = options.intervalMs ?? 5_000;
  const minDrop = options.minDrop ?? 64;
  let open = 0;
  let peak = 0;
  let closedSinceTick = 0;
  let trims = 0;
  let handle: unknown;
  let stopped = trim === undefined;
  const tick = (): void => {
    if (stopped) return;
    // Only once the burst is over (no session ended for a whole interval), so
    // the connections' last state is freed before the trim, not after it.
    if (peak - open >= minDrop && closedSinceTick === 0) {
      trim!();
      trims++;
      peak = open;
    }
    closedSinceTick = 0;
    schedule();
  };
  const schedule = (): void => {
    handle = timers.setTimeout(tick, intervalMs);
    // A trimmer alone never keeps the process alive.
    if (typeof handle === "number") Deno.unrefTimer(handle);
  };
  if (!stopped) schedule();
  return {
    available: trim !== undefined,
    get trims() {
      return trims;
    },
    track(session) {
      if (stopped) return;
      open++;
      if (open > peak) peak = open;
      const done = () => {
        open--;
        closedSinceTick++;
      };
      session.closed.then(done, done);
    },
    stop() {
      stopped = true;
      timers.clearTimeout(handle);
    },
  };
}
