// What a LivePublisher is built with, and the ledger reads it is handed.
import type { LedgerEntry } from "../../ledger/mod.ts";
import type { TrackPath } from "../../path/mod.ts";

/** Options for {@linkcode LivePublisher}. */
export interface LivePublisherOptions {
  /**
   * Recent groups each track keeps in memory (default 32). With flow control
   * (`lagMs`), a subscriber that falls further behind reads the records it
   * missed back through `fetchEntry`; it is not skipped for it.
   */
  readonly cache?: number;
  /**
   * Payload bytes each track keeps in memory at most (default
   * {@linkcode DEFAULT_TRACK_CACHE_BYTES}); the newest record is kept even
   * when larger. Records past it are read back from the ledger, as those
   * past `cache`.
   */
  readonly cacheBytes?: number;
  /**
   * How long a committed record may wait for a subscriber, ms (default
   * {@linkcode RECORD_LAG_MS}): a subscriber whose next record waited longer
   * is slower than the track and skips ahead to the newest (counted in
   * {@linkcode LivePublisher.skips}). 0 turns flow control off: a subscriber
   * more than its session's queue bound behind skips ahead instead.
   */
  readonly lagMs?: number;
  /**
   * The max latency each track advertises, ms (default: `lagMs`, or the
   * producer's 5 s when flow control is off). It is also how long a session
   * keeps sending a group before it gives up on it, so the relay session
   * keeps 5 s: a link gone silent ends its sends, and the relay fetches what
   * did not arrive.
   */
  readonly maxLatencyMs?: number;
  /** Told each time a subscriber skips ahead (see {@linkcode LivePublisher.skips}). */
  readonly onSkip?: () => void;
  /** Told of a contained publishing failure. */
  readonly onError?: (error: unknown) => void;
  /**
   * Reads a committed entry for a FETCH of a group the track's recent cache
   * no longer holds (the funnel reads its ledger); without it such a FETCH
   * is refused as not found.
   */
  readonly fetchEntry?: EntryFetch;
  /**
   * Tracks kept open at most (default {@linkcode MAX_LIVE_TRACKS}): past it
   * the least recently used one without subscribers is closed. A commit opens
   * it again; so does a subscription, through `lookupTrack`, and the track is
   * then kept from closing until the subscriber's cursor attaches (at most
   * `maxTracks` tracks at once so; past that such a subscription is refused as
   * not found, counted in {@linkcode LivePublisher.refusedReopens}). As many
   * broadcasts with every track closed stay announced; past that, the one
   * closed longest ago is withdrawn.
   */
  readonly maxTracks?: number;
  /**
   * Whether a track that is not open exists (the funnel asks its ledger),
   * and its newest entry: a subscription to a closed track opens it again.
   * Without it such a subscription is refused as not found.
   */
  readonly lookupTrack?: TrackLookup;
  /**
   * The key a session's lookups are charged to (see {@linkcode TrackLookup});
   * default: a key of its own for each session (none for a request without
   * a session). The relay session's publisher names the relay.
   */
  readonly lookupAsker?: (session: object | undefined) => string | undefined;
  /**
   * Clock (ms) of the pin that keeps a track opened again for a subscriber
   * open until its cursor attaches (default `Date.now`; the pin lasts
   * `SUBSCRIBER_PIN_MS` at most).
   */
  readonly now?: () => number;
}

/**
 * A track that exists, with its newest entry (if it has one); undefined when
 * there is no such track; "too_many" when `asker` (a key naming the session
 * that asks) has spent its budget of storage lookups for now.
 */
export type TrackLookup = (
  path: TrackPath,
  asker?: string,
) => Promise<{ readonly newest: LedgerEntry | undefined } | undefined | "too_many">;

/** Reads entry `seq` of a track; undefined when there is none. */
export type EntryFetch = (
  path: TrackPath,
  seq: number,
  signal: AbortSignal,
) => Promise<LedgerEntry | undefined>;
