import { type CommitReader, entryFrame, type LedgerEntry } from "../../ledger/mod.ts";
import { broadcastName, type TrackPath } from "../../path/mod.ts";
import {
  Announcer,
  type OpenTracks,
  type ServeDecision,
  type ServeRequest,
  TrackProducer,
} from "../../moq/mod.ts";
import { parseGroupId } from "../../record/mod.ts";
import { LiveTracks, MAX_LIVE_TRACKS, subscribedTrackPath } from "./live_tracks.ts";
import type { EntryFetch, LivePublisherOptions, TrackLookup } from "./publisher_options.ts";

export type { EntryFetch, LivePublisherOptions, TrackLookup } from "./publisher_options.ts";

const encoder = new TextEncoder();

/**
 * The timescale of every record track (TRACK_INFO): nanoseconds, so a
 * frame's timestamp is the record's `wallclock` exactly, as history gives it.
 */
export const RECORD_TIMESCALE = 1_000_000_000;

/** Groups kept in memory per track; older ones are read back from the ledger. */
export const DEFAULT_TRACK_CACHE = 32;

/**
 * Payload bytes kept in memory per track: a few large records (a stream
 * append may be 16 MiB) pin no more than this, whatever `cache` says.
 */
export const DEFAULT_TRACK_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * How long a committed record waits for a subscriber before that subscriber
 * counts as slower than the track and skips ahead: long enough that any
 * burst a subscriber can take at all is delivered whole.
 */
export const RECORD_LAG_MS = 30_000;

/**
 * Turns the ledger's commits into MoQ tracks: one broadcast per track's
 * broadcast path (announced as soon as its first track exists), one
 * {@linkcode TrackProducer} per track, one group per committed entry whose
 * single frame is the stored record and whose sequence is the ledger
 * sequence + 1. Writing never waits for a subscriber: each session reads
 * through its own cursor. Delivery is flow controlled (unless `lagMs` is 0,
 * where a session's queue bound applies): the track keeps its
 * recent groups in memory, and a cursor that falls behind them reads the
 * records it missed back from the ledger (`fetchEntry`), in order, at its
 * own pace, so no burst makes a subscriber lose a record. Only a subscriber
 * whose next record has waited more than `lagMs` is slower than the track:
 * it skips ahead to the newest record, and the skip is counted
 * ({@linkcode skips}). Such record tracks advertise `lagMs` as their max
 * latency (unless `maxLatencyMs` says otherwise) and ask for in-order
 * delivery, which a relay flow controls in turn.
 *
 * Sessions (the own listener's and the relay session) share
 * {@linkcode announcer} and answer requests with {@linkcode serve}.
 *
 * @example
 * ```ts
 * const live = new LivePublisher();
 * ledger.commits.subscribe(live);
 * const moq = await accept(session, { announcer: live.announcer, serve: live.serve });
 * ```
 */
export class LivePublisher implements CommitReader {
  /** Every broadcast that has at least one created track. */
  readonly announcer: Announcer = new Announcer();
  readonly #tracks: LiveTracks;
  readonly #lookupTrack: TrackLookup | undefined;
  readonly #lookupAsker: (session: object | undefined) => string | undefined;
  // Each session's key for its lookups' budget (see `lookupAsker`).
  readonly #askers = new WeakMap<object, string>();
  #nextAsker = 0;
  readonly #cache: number;
  readonly #cacheBytes: number;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #fetchEntry: EntryFetch | undefined;
  readonly #lagMs: number;
  readonly #maxLatencyMs: number | undefined;
  readonly #onSkip: (() => void) | undefined;
  #failures = 0;
  #skips = 0;
  #skippedRecords = 0;
  #refusedReopens = 0;
  #limitedLookups = 0;
  #closed = false;

  /** Makes a publisher with no tracks. */
  constructor(options: LivePublisherOptions = {}) {
    this.#cache = options.cache ?? DEFAULT_TRACK_CACHE;
    this.#cacheBytes = options.cacheBytes ?? DEFAULT_TRACK_CACHE_BYTES;
    this.#onError = options.onError;
    this.#fetchEntry = options.fetchEntry;
    this.#lagMs = options.lagMs ?? RECORD_LAG_MS;
    this.#maxLatencyMs = options.maxLatencyMs ?? (this.#lagMs > 0 ? this.#lagMs : undefined);
    this.#onSkip = options.onSkip;
    this.#tracks = new LiveTracks(
      this.announcer,
      options.maxTracks ?? MAX_LIVE_TRACKS,
      options.now ?? Date.now,
    );
    this.#lookupTrack = options.lookupTrack;
    this.#lookupAsker = options.lookupAsker ?? ((session) => session && this.#askerOf(session));
  }

  /** A track exists; publishes `newest` as its latest group when there is one. */
  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void {
    this.#contain(() => {
      const track = this.#ensure(path);
      if (track && newest) write(track, newest);
    });
  }

  /**
   * Tracks stored before this process started: their broadcasts are
   * announced, the tracks opened only when a subscriber names one
   * (through `lookupTrack`, which reads its newest entry).
   */
  tracksStored(paths: readonly TrackPath[]): void {
    this.announceStored(paths.map(broadcastName));
  }

  /** Announces broadcasts of stored tracks (see {@linkcode tracksStored}). */
  announceStored(broadcasts: Iterable<string>): void {
    this.#contain(() => {
      if (!this.#closed) this.#tracks.announceStored(broadcasts);
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

  /**
   * The open tracks, each told as it opens and closes: a session to an IETF
   * relay pushes them (PUBLISH) besides announcing their broadcasts.
   */
  readonly tracks: OpenTracks = {
    watch: (listener) => this.#tracks.watch(listener),
  };

  /** Recent groups each track keeps. */
  get cacheSize(): number {
    return this.#cache;
  }

  /** Times a subscriber was slower than its track and skipped ahead to the newest record. */
  get skips(): number {
    return this.#skips;
  }

  /** Records subscribers did not receive because they skipped ahead. */
  get skippedRecords(): number {
    return this.#skippedRecords;
  }

  /** Tracks open now (at most `maxTracks`, past tracks with subscribers). */
  get openTracks(): number {
    return this.#tracks.size;
  }

  /** Idle tracks closed so far to keep within `maxTracks`. */
  get closedTracks(): number {
    return this.#tracks.closedCount;
  }

  /**
   * Subscriptions to a closed track refused because `maxTracks` tracks were
   * kept open already for subscribers whose cursors had not attached.
   */
  get refusedReopens(): number {
    return this.#refusedReopens;
  }

  /**
   * Requests for a track that is not open refused "too_many": their session
   * had spent its budget of storage lookups.
   */
  get limitedLookups(): number {
    return this.#limitedLookups;
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
   * Answers a subscriber's request: the track's producer, or "not_found"
   * for a track that was never created (by PUT, POST or restore). A track
   * closed to keep within `maxTracks` is opened again when `lookupTrack`
   * finds it, with its newest entry; what came before is read back from the
   * ledger as for any subscriber behind the recent groups. Opened for a
   * SUBSCRIBE (a request of no `kind` counts as one), it is kept from closing
   * until the subscriber's cursor attaches, the request's `session` holding
   * at most its share of such pins (`SESSION_PIN_SHARE`); for
   * another kind (FETCH, TRACK, TRACK_STATUS: no cursor to wait for) it is not.
   * A lookup that would query storage is charged to the session's budget
   * (`lookupAsker`): past it the request is refused "too_many".
   */
  readonly serve = (
    request:
      & Pick<ServeRequest, "path" | "track">
      & Partial<Pick<ServeRequest, "kind" | "session">>,
  ): ServeDecision | Promise<ServeDecision> => {
    const open = this.#tracks.get(request.path, request.track);
    if (open) return open;
    const lookup = this.#lookupTrack;
    const path = lookup && !this.#closed
      ? subscribedTrackPath(request.path, request.track)
      : undefined;
    const pin = request.kind === undefined || request.kind === "subscribe";
    if (!path) return "not_found";
    const asker = this.#lookupAsker(request.session);
    return this.#reopen(lookup!, path, pin ? { owner: request.session } : undefined, asker);
  };

  #askerOf(session: object): string {
    let key = this.#askers.get(session);
    if (key === undefined) {
      key = String(this.#nextAsker++);
      this.#askers.set(session, key);
    }
    return key;
  }

  // `pin`: keep the track open for a subscriber's cursor, counted against `owner`'s share.
  async #reopen(
    lookup: TrackLookup,
    path: TrackPath,
    pin: { owner: object | undefined } | undefined,
    asker: string | undefined,
  ): Promise<ServeDecision> {
    // Every slot pinned (or the session's share): refused before it costs a lookup.
    if (pin && !this.#tracks.canPin(pin.owner)) return this.#refuseReopen();
    let found;
    try {
      found = await lookup(path, asker);
    } catch (error) {
      this.#onError?.(error);
      return "not_found";
    }
    if (found === "too_many") {
      this.#limitedLookups++;
      return "too_many";
    }
    if (!found || this.#closed) return "not_found";
    // A commit may have opened it meanwhile; then it has newer groups than `found`.
    const open = this.#tracks.get(path.broadcast.join("/"), path.track);
    if (open) return open;
    const make = (attached: () => void) => this.#make(path, attached);
    const track = pin
      ? this.#tracks.ensurePinned(path, make, pin.owner)
      : this.#tracks.ensure(path, make);
    if (!track) return this.#refuseReopen();
    if (found.newest) write(track, found.newest);
    return track;
  }

  #refuseReopen(): ServeDecision {
    this.#refusedReopens++;
    return "not_found";
  }

  /** The producer of an open track (for tests and embedders). */
  producer(broadcast: string, track: string): TrackProducer | undefined {
    return this.#tracks.get(broadcast, track);
  }

  /** Canonical paths of every published broadcast. */
  broadcasts(): string[] {
    return this.#tracks.broadcasts();
  }

  /** Ends every track and announcement; later calls are ignored. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#tracks.close();
  }

  readonly #skipped = (count: number, forward: boolean): void => {
    if (forward) this.#skips++;
    this.#skippedRecords += count;
    this.#onSkip?.();
  };

  #ensure(path: TrackPath): TrackProducer | undefined {
    if (this.#closed) return undefined;
    return this.#tracks.ensure(path, (attached) => this.#make(path, attached));
  }

  #make(path: TrackPath, attached: () => void): TrackProducer {
    // Records form one sequence in commit order: ask for in-order delivery. Timestamps
    // are the ledger's commit times in Unix nanoseconds, exactly.
    const fetchEntry = this.#fetchEntry;
    return new TrackProducer({
      cache: this.#cache,
      cacheBytes: this.#cacheBytes,
      ordered: true,
      timescale: RECORD_TIMESCALE,
      // With flow control a record waits for a subscriber up to the lag bound: advertised
      // as max latency, so a relay (and a peer's cache) keep it for a subscriber behind by
      // less. (0 would say "no limit" to some peers but "keep nothing" to @moq/net.) Without,
      // the producer's 5 s, which also ends sends to a link gone silent.
      ...(this.#lagMs > 0 ? { lagMs: this.#lagMs } : {}),
      ...(this.#maxLatencyMs !== undefined ? { maxLatency: this.#maxLatencyMs } : {}),
      observer: { skipped: this.#skipped, attached },
      // A FETCH past the cache is answered from the ledger: group sequence = seq + 1.
      ...(fetchEntry && {
        fetchMissing: async (sequence: number, signal: AbortSignal) => {
          const entry = sequence > 0 ? await fetchEntry(path, sequence - 1, signal) : undefined;
          return entry &&
            { frames: encoder.encode(entryFrame(entry)), timestamp: entry.wallclock };
        },
      }),
    });
  }
}

function write(track: TrackProducer, entry: LedgerEntry): void {
  if (entry.redacts !== undefined) forget(track, entry.redacts);
  // The ledger's commit time (ns) is the group timestamp, exact, in the track's ns timescale.
  // Encoded on first read: with no subscriber a commit costs no JSON or bytes here.
  track.writeGroup(entry.seq + 1, () => encoder.encode(entryFrame(entry)), {
    timestamp: entry.wallclock,
    size: frameSize(entry),
  });
}

/**
 * About the bytes of {@linkcode entryFrame}, counted against the byte budget
 * without encoding it: its parts' lengths (text as UTF-16 units, which is
 * what the entry holds in memory; base64 for bytes) plus the JSON around them.
 */
function frameSize(entry: LedgerEntry): number {
  const bytes = entry.bytes === undefined ? 0 : Math.ceil(entry.bytes.length / 3) * 4;
  return (entry.payload?.length ?? 0) + (entry.meta?.length ?? 0) + bytes +
    (entry.sender?.length ?? 0) + (entry.redacts?.length ?? 0) + 48;
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
