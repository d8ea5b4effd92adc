import {
  type CommitOutcome,
  entryGroup,
  type GroupId,
  type Ledger,
  type LedgerEntry,
  LedgerError,
  parseGroupId,
  trackKey,
  type TrackLedger,
  type TrackPath,
} from "../ledger/mod.ts";
import { InvalidRequestError, NotFoundError, RateLimitedError } from "./errors.ts";
import { newerPageBody, olderPageBody } from "./history.ts";
import { IdempotencyCache, type PostAnswer } from "./idempotency.ts";
import type { RateLimit } from "../config/mod.ts";
import { RateLimiter } from "./limits.ts";
import type { RecordSink } from "./sink.ts";

/** Options of {@link FunnelService}. */
export interface FunnelServiceOptions {
  readonly ledger: Ledger;
  /** FUNNEL_SENDER_LIMIT: per sender, per track. */
  readonly senderLimit?: RateLimit | undefined;
  /** FUNNEL_TRACK_LIMIT: per track, all senders together. */
  readonly trackLimit?: RateLimit | undefined;
  /** Millisecond clock for the rate limits. */
  readonly now?: () => number;
  /** Told when PUT creates a track (a first POST's track arrives with its commit). */
  readonly sink?: RecordSink | undefined;
}

/** A POST's outcome: the committed group, and whether it replays an earlier answer. */
export interface PostOutcome extends PostAnswer {
  readonly replayed: boolean;
}

/** Where a history page starts: before a group (older records) or after one (newer records). */
export interface HistoryCursor {
  /** Records older than this group, newest page first. */
  readonly before?: string | undefined;
  /** Records newer than this group, oldest first. */
  readonly after?: string | undefined;
}

/** Who is posting: the credential's sub, and a key for rate limiting anonymous senders. */
export interface Poster {
  readonly sender: string | undefined;
  /** Rate-limit identity: the sender, or the client address when there is no sender. */
  readonly limitKey: string;
}

/**
 * The funnel's operations on tracks, independent of HTTP: posting with
 * idempotency and rate limits, creating, paging history and redacting.
 * Failures a client must see are thrown as the domain errors of
 * `errors.ts`, `LedgerError("unavailable")` when storage cannot be reached.
 */
export class FunnelService {
  readonly #ledger: Ledger;
  readonly #senderLimiter: RateLimiter | undefined;
  readonly #trackLimiter: RateLimiter | undefined;
  readonly #sink: RecordSink | undefined;
  readonly #idempotency = new Map<string, Promise<IdempotencyCache>>();

  /** Creates the service over a ledger. */
  constructor(options: FunnelServiceOptions) {
    this.#ledger = options.ledger;
    this.#sink = options.sink;
    const now = options.now ?? Date.now;
    this.#senderLimiter = options.senderLimit && new RateLimiter(options.senderLimit, now);
    this.#trackLimiter = options.trackLimit && new RateLimiter(options.trackLimit, now);
  }

  /** Commits one record (creating the track), honouring Idempotency-Key and the limits. */
  async post(
    path: TrackPath,
    poster: Poster,
    payload: string,
    idempotencyKey: string | undefined,
  ): Promise<PostOutcome> {
    const track = this.#ledger.opened(path) ?? await this.#track(path, true);
    const cache = idempotencyKey === undefined ? undefined : await this.#keys(track);
    if (cache && idempotencyKey !== undefined) {
      const earlier = cache.get(poster.sender, idempotencyKey);
      if (earlier) return { ...(await earlier), replayed: true };
    }
    this.#checkLimits(trackKey(path), poster.limitKey);
    const committing = track.commit({
      ...(poster.sender === undefined ? {} : { sender: poster.sender }),
      payload,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    });
    if (cache && idempotencyKey !== undefined) {
      cache.remember(poster.sender, idempotencyKey, committing.then((c) => answerOf(c.entry)));
    }
    let outcome: CommitOutcome;
    try {
      outcome = await committing;
    } catch (error) {
      // A commit that failed or timed out may still have landed (its answer was
      // lost): keys are reloaded from the ledger before the next keyed POST, so a
      // retry with the same Idempotency-Key finds the record instead of storing it twice.
      if (error instanceof LedgerError && error.kind === "unavailable") {
        this.#idempotency.delete(trackKey(path));
      }
      throw error;
    }
    // On a shared ledger another process may have stored this key first: its answer is ours.
    const entry = outcome.entry;
    return { group: entryGroup(entry), wallclock: entry.wallclock, replayed: outcome.existing };
  }

  /** Creates a track ahead of its first record; true when it did not exist before. */
  async put(path: TrackPath): Promise<boolean> {
    const existing = await this.#track(path, false);
    if (existing) return false;
    await this.#track(path, true);
    // Subscribers may now wait on the track; the publisher ignores a repeat.
    this.#sink?.trackCreated(path, undefined);
    return true;
  }

  /**
   * A history page as JSON text chunks, read from the ledger as they are
   * sent: the newest records, those older than `before`, or those newer than
   * `after` (never both). 400 for a malformed cursor, 404 for a track that
   * does not exist.
   */
  async history(
    path: TrackPath,
    cursor: HistoryCursor,
    limit: number,
  ): Promise<AsyncIterable<string>> {
    if (cursor.before !== undefined && cursor.after !== undefined) {
      throw new InvalidRequestError(
        "Pass either before (older records) or after (newer records), not both",
      );
    }
    const before = cursor.before === undefined ? undefined : parseCursor("before", cursor.before);
    const after = cursor.after === undefined
      ? undefined
      : START.test(cursor.after)
      ? { epoch: 0, seq: 0 }
      : parseCursor("after", cursor.after);
    const track = await this.#existing(path);
    if (after) {
      // Only epoch 1 exists: nothing lies after a later epoch, everything after epoch 0.
      if (after.epoch > 1) return newerPageBody([], () => false);
      const afterSeq = after.epoch === 0 ? undefined : after.seq;
      const entries = track.entries({ after: afterSeq, limit }, { pageSize: limit });
      return newerPageBody(entries, (newest) => newest.seq < (track.newest?.seq ?? -1));
    }
    // Only epoch 1 exists: a later epoch lies after everything, so "before" it is all.
    const beforeSeq = before && before.epoch === 1 ? before.seq : undefined;
    const entries = track.entries({ direction: "backward", before: beforeSeq, limit }, {
      pageSize: limit,
    });
    return olderPageBody(entries);
  }

  /**
   * Redacts a record. Resolves the redaction's answer, or undefined when the
   * record was redacted already (204).
   */
  async redact(
    path: TrackPath,
    group: string | undefined,
    sender: string | undefined,
  ): Promise<PostAnswer | undefined> {
    if (group === undefined || group === "") {
      throw new InvalidRequestError(
        "The group query parameter is required, e.g. ?group=e000001-g00000000",
      );
    }
    let id;
    try {
      id = parseGroupId(group);
    } catch (error) {
      throw new InvalidRequestError((error as Error).message);
    }
    const track = await this.#existing(path);
    if (id.epoch !== 1) throw new NotFoundError(`No group ${group} in this track`);
    try {
      const outcome = await track.redact(id.seq, sender);
      if (outcome.already) return undefined;
      const entry = outcome.redaction;
      return { group: entryGroup(entry), wallclock: entry.wallclock };
    } catch (error) {
      if (error instanceof TypeError) {
        throw new InvalidRequestError(`Group ${group} is a redaction; it cannot be redacted`);
      }
      if (error instanceof LedgerError && error.kind === "not_found") {
        throw new NotFoundError(`No group ${group} in this track`);
      }
      throw error;
    }
  }

  #checkLimits(track: string, limitKey: string): void {
    // Peek both before taking either, so a refusal by one limit costs nothing from the other.
    const sender = this.#senderLimiter?.peek(`${track}\u0000${limitKey}`);
    if (sender && !sender.ok) {
      throw new RateLimitedError(
        "sender",
        sender.retryAfterSeconds,
        "This sender is over its record rate for the track; retry later",
      );
    }
    const trackResult = this.#trackLimiter?.take(track);
    if (trackResult && !trackResult.ok) {
      throw new RateLimitedError(
        "track",
        trackResult.retryAfterSeconds,
        "The track is over its record rate; retry later",
      );
    }
    this.#senderLimiter?.take(`${track}\u0000${limitKey}`);
  }

  async #existing(path: TrackPath): Promise<TrackLedger> {
    const track = await this.#track(path, false);
    if (!track) throw new NotFoundError(`No track ${trackKey(path)}`);
    return track;
  }

  #track(path: TrackPath, create: true): Promise<TrackLedger>;
  #track(path: TrackPath, create: false): Promise<TrackLedger | undefined>;
  #track(path: TrackPath, create: boolean): Promise<TrackLedger | undefined> {
    return this.#ledger.track(path, create);
  }

  // Keys of the track's last 1024 records are recovered from the ledger once,
  // so a retry reaching a restarted funnel with a durable ledger is not stored twice.
  #keys(track: TrackLedger): Promise<IdempotencyCache> {
    const key = trackKey(track.path);
    let loading = this.#idempotency.get(key);
    if (!loading) {
      loading = (async () => {
        const cache = new IdempotencyCache();
        const recent = await track.backend.readBefore(undefined, 1024);
        for (const entry of recent.reverse()) {
          if (entry.idempotencyKey === undefined) continue;
          cache.remember(entry.sender, entry.idempotencyKey, Promise.resolve(answerOf(entry)));
        }
        return cache;
      })();
      this.#idempotency.set(key, loading);
      loading.catch(() => this.#idempotency.delete(key));
    }
    return loading;
  }
}

function answerOf(entry: LedgerEntry): PostAnswer {
  return { group: entryGroup(entry), wallclock: entry.wallclock };
}

/**
 * `after=e000000-g00000000` (epoch 0, before the first epoch) starts a
 * forward page at the track's first record; no other group names that point.
 */
const START = /^e0{1,15}-g0{1,15}$/;

function parseCursor(name: string, text: string): GroupId {
  try {
    return parseGroupId(text);
  } catch (error) {
    throw new InvalidRequestError(`${name}: ${(error as Error).message}`);
  }
}
