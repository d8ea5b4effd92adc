import { broadcastName, entryFrame, type LedgerEntry, type TrackPath } from "../../ledger/mod.ts";
import {
  type Announcement,
  Announcer,
  type ServeDecision,
  type ServeRequest,
  TrackProducer,
} from "../../moq/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import { parseGroupId } from "../../record/mod.ts";
import type { RecordSink } from "../sink.ts";

/** Options for {@linkcode LivePublisher}. */
export interface LivePublisherOptions {
  /**
   * Recent groups each track keeps (default 32): how far a subscriber may
   * fall behind in a burst before it is skipped to the latest record.
   */
  readonly cache?: number;
  /** Told of a contained publishing failure. */
  readonly onError?: (error: unknown) => void;
  /**
   * Reads a committed entry for a FETCH of a group the track's recent cache
   * no longer holds (the funnel reads its ledger); without it such a FETCH
   * is refused as not found.
   */
  readonly fetchEntry?: EntryFetch;
}

/** Reads entry `seq` of a track; undefined when there is none. */
export type EntryFetch = (
  path: TrackPath,
  seq: number,
  signal: AbortSignal,
) => Promise<LedgerEntry | undefined>;

interface LiveBroadcast {
  readonly tracks: Map<string, TrackProducer>;
  readonly announcement: Announcement;
}

const encoder = new TextEncoder();

/**
 * The timescale of every record track (TRACK_INFO): nanoseconds, so a
 * frame's timestamp is the record's `wallclock` exactly, as history gives it.
 */
export const RECORD_TIMESCALE = 1_000_000_000;

/** Groups kept per track for subscribers that fall behind in a burst. */
export const DEFAULT_TRACK_CACHE = 32;

/**
 * Turns the ledger's commits into MoQ tracks: one broadcast per track's
 * broadcast path (announced as soon as its first track exists), one
 * {@linkcode TrackProducer} per track, one group per committed entry whose
 * single frame is the stored record and whose sequence is the ledger
 * sequence + 1. Writing never waits for a subscriber: each session reads
 * through its own bounded cursor and a slow one skips ahead.
 *
 * Sessions (the own listener's and the relay session) share
 * {@linkcode announcer} and answer requests with {@linkcode serve}.
 *
 * @example
 * ```ts
 * const live = new LivePublisher();
 * const ledger = new Ledger(backend, { onCommit: (t, e) => live.committed(t.path, e) });
 * const moq = await accept(session, { announcer: live.announcer, serve: live.serve });
 * ```
 */
export class LivePublisher implements RecordSink {
  /** Every broadcast that has at least one created track. */
  readonly announcer: Announcer = new Announcer();
  readonly #broadcasts = new Map<string, LiveBroadcast>();
  readonly #byPath = new WeakMap<TrackPath, TrackProducer>();
  readonly #cache: number;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #fetchEntry: EntryFetch | undefined;
  #failures = 0;
  #closed = false;

  /** Makes a publisher with no tracks. */
  constructor(options: LivePublisherOptions = {}) {
    this.#cache = options.cache ?? DEFAULT_TRACK_CACHE;
    this.#onError = options.onError;
    this.#fetchEntry = options.fetchEntry;
  }

  /** A track exists; publishes `newest` as its latest group when there is one. */
  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void {
    this.#contain(() => {
      const track = this.#ensure(path);
      if (track && newest) write(track, newest);
    });
  }

  /** Publishes committed entries, oldest first; creates the track if it was not yet known. */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    this.#contain(() => {
      const track = this.#ensure(path);
      if (!track) return;
      for (const entry of entries) write(track, entry);
    });
  }

  /** Recent groups each track keeps. */
  get cacheSize(): number {
    return this.#cache;
  }

  /** Publishing failures that were contained (never thrown into the commit path). */
  get failures(): number {
    return this.#failures;
  }

  // The records are committed already: a publishing fault must not fail the POST.
  #contain(publish: () => void): void {
    try {
      publish();
    } catch (error) {
      this.#failures++;
      this.#onError?.(error);
    }
  }

  /**
   * Answers a subscriber's request: the track's producer, or "not-found"
   * for a track that was never created (by PUT, POST or restore).
   */
  readonly serve = (request: Pick<ServeRequest, "path" | "track">): ServeDecision => {
    return this.#broadcasts.get(normalizePath(request.path))?.tracks.get(request.track) ??
      "not-found";
  };

  /** The producer of a created track (for tests and embedders). */
  producer(broadcast: string, track: string): TrackProducer | undefined {
    return this.#broadcasts.get(normalizePath(broadcast))?.tracks.get(track);
  }

  /** Canonical paths of every published broadcast. */
  broadcasts(): string[] {
    return [...this.#broadcasts.keys()];
  }

  /** Ends every track and announcement; later sink calls are ignored. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const b of this.#broadcasts.values()) {
      for (const t of b.tracks.values()) t.close();
      b.announcement.withdraw();
    }
    this.#broadcasts.clear();
  }

  #ensure(path: TrackPath): TrackProducer | undefined {
    if (this.#closed) return undefined;
    // Hot path: the HTTP layer reuses one path object per track URL.
    const known = this.#byPath.get(path);
    if (known) return known;
    const name = normalizePath(broadcastName(path));
    let broadcast = this.#broadcasts.get(name);
    if (!broadcast) {
      broadcast = { tracks: new Map(), announcement: this.announcer.announce(name) };
      this.#broadcasts.set(name, broadcast);
    }
    let track = broadcast.tracks.get(path.track);
    if (!track) {
      // Records form one sequence in commit order: ask for in-order delivery. Timestamps
      // are the ledger's commit times in Unix nanoseconds, exactly.
      const fetchEntry = this.#fetchEntry;
      track = new TrackProducer({
        cache: this.#cache,
        ordered: true,
        timescale: RECORD_TIMESCALE,
        // A FETCH past the cache is answered from the ledger: group sequence = seq + 1.
        ...(fetchEntry && {
          fetchMissing: async (sequence: number, signal: AbortSignal) => {
            const entry = sequence > 0 ? await fetchEntry(path, sequence - 1, signal) : undefined;
            return entry &&
              { frames: encoder.encode(entryFrame(entry)), timestamp: entry.wallclock };
          },
        }),
      });
      broadcast.tracks.set(path.track, track);
    }
    this.#byPath.set(path, track);
    return track;
  }
}

function write(track: TrackProducer, entry: LedgerEntry): void {
  if (entry.redacts !== undefined) forget(track, entry.redacts);
  // The ledger's commit time (ns) is the group timestamp, exact, in the track's ns timescale.
  // Encoded on first read: with no subscriber a commit costs no JSON or bytes here.
  track.writeGroup(entry.seq + 1, () => encoder.encode(entryFrame(entry)), {
    timestamp: entry.wallclock,
  });
}

/**
 * A redaction was committed: the redacted record's cached group (which
 * subscribers starting inside the cache, and FETCH, would be served) now
 * holds what the ledger holds, the record without its payload.
 */
function forget(track: TrackProducer, redacted: string): void {
  let seq: number;
  try {
    seq = parseGroupId(redacted).seq;
  } catch {
    return; // the ledger accepted it, so this does not happen; nothing cached to forget
  }
  const group = track.group(seq + 1);
  const entry: LedgerEntry = {
    epoch: 0,
    seq,
    wallclock: group?.exactTimestamp ?? 0n,
    redacted: true,
  };
  group?.replaceFrames(encoder.encode(entryFrame(entry)));
}
