import { SluiceError } from "../../errors/mod.ts";
import { Session } from "node:inspector";
import { getHeapSnapshot } from "node:v8";
import { sleep } from "../../timers/mod.ts";

/** Longest CPU profile served, in seconds. */
export const MAX_PROFILE_SECONDS = 300;

let profiling = false;

function post(session: Session, method: string, params: object = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    session.post(method, params, (err: Error | null, result?: unknown) => {
      if (err) reject(err);
      else resolve(result);
    });
  });
}

/**
 * Samples the CPU for `seconds` and returns a `.cpuprofile` (the V8 CPU
 * profile JSON that Chrome DevTools' Performance panel and speedscope open).
 * Only one profile runs at a time.
 */
export async function cpuProfile(seconds: number, signal?: AbortSignal): Promise<string> {
  if (profiling) throw new ProfileBusyError();
  profiling = true;
  const session = new Session();
  session.connect();
  try {
    await post(session, "Profiler.enable");
    await post(session, "Profiler.setSamplingInterval", { interval: 1000 });
    await post(session, "Profiler.start");
    await sleep(seconds * 1000, signal);
    const result = await post(session, "Profiler.stop") as { profile: unknown };
    return JSON.stringify(result.profile);
  } finally {
    session.disconnect();
    profiling = false;
  }
}

/** A CPU profile is already being taken. */
export class ProfileBusyError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["busy"] as const;
  /** Stable code. */
  declare readonly code: "busy";
  /** Creates the error. */
  constructor() {
    super("busy", "A CPU profile is already running");
  }
}

/**
 * A V8 heap snapshot (`.heapsnapshot`, opened by Chrome DevTools' Memory
 * panel) as its chunks come, for a streamed response.
 */
export function heapSnapshot(): AsyncIterable<Uint8Array> {
  return getHeapSnapshot() as AsyncIterable<Uint8Array>;
}
