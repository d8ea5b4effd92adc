import type { LedgerBackend, LedgerEvents } from "./backend.ts";
import { LedgerError } from "./errors.ts";
import { retryUntilDone, type Timers } from "../timers/mod.ts";

/** Options of {@link waitForBackend}. */
export interface WaitForBackendOptions {
  /** The backend's name ("postgres", "s3"), known before it opens. */
  readonly name: string;
  /** Whether it is shared by several processes (PostgreSQL): then it is followed once open. */
  readonly shared: boolean;
  /** Told of every failed attempt to open it (tried again after 250 ms doubling up to 10 s). */
  readonly onError?: (error: unknown) => void;
  /** Timers of the waits between attempts (default the global ones). */
  readonly timers?: Timers;
}

/** A backend that opens in the background (see {@link waitForBackend}). */
export interface WaitingBackend extends LedgerBackend {
  /** True once the backend underneath is open (and followed, when followed). */
  readonly ready: boolean;
  /** Resolves once ready; never rejects (stays pending when closed first). */
  readonly opened: Promise<void>;
}

/**
 * A backend whose storage could not be reached at startup: `open` is tried
 * again with backoff until it succeeds, and until then every call fails as
 * `LedgerError("unavailable")` (the funnel answers 503). Following (shared
 * backends) starts once it opens, before {@link WaitingBackend.opened}
 * resolves, so a track created meanwhile is listed or heard of.
 *
 * @example
 * ```ts
 * const backend = waitForBackend(() => openBackend(location), { name: "postgres", shared: true });
 * ```
 */
export function waitForBackend(
  open: () => Promise<LedgerBackend>,
  options: WaitForBackendOptions,
): WaitingBackend {
  const stopping = new AbortController();
  const opened = Promise.withResolvers<void>();
  let inner: LedgerBackend | undefined;
  let events: LedgerEvents | undefined;
  let unfollow: (() => Promise<void>) | undefined;
  let since = new Date().toISOString();
  let lastError = "trying to reach it";
  const attempt = async (): Promise<void> => {
    const backend = await open();
    if (stopping.signal.aborted) return void await backend.close();
    try {
      if (events && backend.follow) unfollow = await backend.follow(events);
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
    inner = backend;
    opened.resolve();
  };
  void retryUntilDone(attempt, {
    signal: stopping.signal,
    ...(options.timers ? { timers: options.timers } : {}),
    onError: (error) => {
      lastError = error instanceof Error ? error.message : String(error);
      options.onError?.(error);
    },
  });
  const away = (what: string): LedgerError =>
    new LedgerError(
      "unavailable",
      `${what}: the ${options.name} ledger has not been reached since ${since} (${lastError})`,
    );
  const ready = (what: string): LedgerBackend => {
    if (inner) return inner;
    throw away(what);
  };
  const backend: WaitingBackend = {
    name: options.name,
    get ready() {
      return inner !== undefined;
    },
    opened: opened.promise,
    listTracks: async () => await ready("Cannot list ledger tracks").listTracks(),
    openTrack: async (path, create) =>
      await ready("Cannot open the ledger track").openTrack(path, create),
    abandon: () => inner?.abandon?.(),
    close: async () => {
      stopping.abort();
      since = "closing";
      await unfollow?.().catch(() => {});
      await inner?.close();
    },
  };
  if (!options.shared) return backend;
  return Object.assign(backend, {
    follow: (followed: LedgerEvents): Promise<() => Promise<void>> => {
      if (inner?.follow) return inner.follow(followed);
      events = followed;
      return Promise.resolve(async () => {
        events = undefined;
        await unfollow?.();
      });
    },
    exclusive: async <T>(name: string, task: () => Promise<T>): Promise<T | undefined> => {
      const open = ready("Cannot take the ledger lock");
      return open.exclusive ? await open.exclusive(name, task) : await task();
    },
  });
}
