import { clientInput } from "../errors/mod.ts";
import {
  type CommitOutcome,
  entryGroup,
  type Ledger,
  type LedgerEntry,
  LedgerError,
  type TrackLedger,
} from "../ledger/mod.ts";
import { formatGroupId, type GroupId, parseGroupId } from "../record/mod.ts";
import { trackKey, type TrackPath } from "../path/mod.ts";
import { GoneError, InvalidRequestError, NotFoundError, RateLimitedError } from "./errors.ts";
import { newerPageBody, olderPageBody } from "./history.ts";
import { IDEMPOTENCY_TRACKS, IdempotencyCache, type PostAnswer } from "./idempotency.ts";
import { LruCache } from "../cache/mod.ts";
import type { RateLimit } from "../config/mod.ts";
import { RateLimiter } from "./limits.ts";

/** Options of {@link FunnelService}. */
export interface FunnelServiceOptions {
  readonly ledger: Ledger;
  /** FUNNEL_SENDER_LIMIT: per sender, per track. */
  readonly senderLimit?: RateLimit | undefined;
  /** FUNNEL_TRACK_LIMIT: per track, all senders together. */
  readonly trackLimit?: RateLimit | undefined;
  /** Millisecond clock for the rate limits. */
  readonly now?: () => number;
  /** Tracks whose Idempotency-Keys stay in memory (default {@link IDEMPOTENCY_TRACKS}). */
  readonly idempotencyTracks?: number;
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
  // Bounded: a track whose keys were dropped reads them back from the ledger, once the
  // commits its dropped keys were waiting on are durable (#settling), so none is missed.
  readonly #idempotency: LruCache<string, Promise<IdempotencyCache>>;
  readonly #settling = new Map<string, Promise<void>>();

  /** Creates the service over a ledger. */
  constructor(options: FunnelServiceOptions) {
    this.#idempotency = new LruCache(options.idempotencyTracks ?? IDEMPOTENCY_TRACKS, {
      onEvict: (key, loading) => this.#settle(key, loading),
    });
    this.#ledger = options.ledger;
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
      if (error instanceof LedgerError && error.code === "unavailable") {
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
    // The ledger's commit feed tells the live side, so subscribers may wait on the track.
    return await this.#ledger.create(path);
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
      if (after.epoch > 1) return newerPageBody([], limit, 0, -1);
      const afterSeq = after.epoch === 0 ? undefined : after.seq;
      // Taken before the read starts: everything up to it is durable, so the read must reach it.
      const committed = track.newest?.seq ?? -1;
      // One entry past the page says whether the page gets an `after` cursor.
      const entries = track.entries({ after: afterSeq, limit: limit + 1 }, {
        pageSize: limit + 1,
      });
      // From the start means from the first record kept; after a cursor, nothing is skipped.
      const read = afterSeq === undefined
        ? entries
        : await continuing(entries, afterSeq + 1, () => track.first());
      return newerPageBody(read, limit, afterSeq ?? -1, committed);
    }
    // Only epoch 1 exists: a later epoch lies after everything, so "before" it is all.
    const beforeSeq = before && before.epoch === 1 ? before.seq : undefined;
    const first = await track.first();
    if (beforeSeq !== undefined && first > 0 && beforeSeq <= first) {
      throw new GoneError(
        formatGroupId({ epoch: 1, seq: first }),
        `Records before ${cursor.before} were removed by the track's retention`,
      );
    }
    const entries = track.entries({ direction: "backward", before: beforeSeq, limit }, {
      pageSize: limit,
    });
    return olderPageBody(entries, first);
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
    const id = clientInput(() => parseGroupId(group));
    const track = await this.#existing(path);
    if (id.epoch !== 1) throw new NotFoundError(`No group ${group} in this track`);
    try {
      const outcome = await track.redact(id.seq, sender);
      if (outcome.already) return undefined;
      const entry = outcome.redaction;
      return { group: entryGroup(entry), wallclock: entry.wallclock };
    } catch (error) {
      if (error instanceof LedgerError && error.code === "invalid_request") {
        throw new InvalidRequestError(`Group ${group} is a redaction; it cannot be redacted`);
      }
      if (error instanceof LedgerError && error.code === "not_found") {
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

  /** Tracks whose Idempotency-Keys are held in memory now. */
  get idempotencyTracks(): number {
    return this.#idempotency.size;
  }

  // A track's keys were dropped: until the commits they wait on settle, a reload waits too.
  #settle(key: string, loading: Promise<IdempotencyCache>): void {
    const done = loading.then((cache) => cache.settled(), () => {});
    const previous = this.#settling.get(key);
    const both = previous ? Promise.all([previous, done]).then(() => {}) : done;
    this.#settling.set(key, both);
    void both.then(() => {
      if (this.#settling.get(key) === both) this.#settling.delete(key);
    });
  }

  // Keys of the track's last 1024 records are recovered from the ledger once,
  // so a retry reaching a restarted funnel with a durable ledger is not stored twice.
  #keys(track: TrackLedger): Promise<IdempotencyCache> {
    const key = trackKey(track.path);
    let loading = this.#idempotency.get(key);
    if (!loading) {
      const settling = this.#settling.get(key);
      loading = (async () => {
        await settling;
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

/**
 * The entries of a forward page that must start at `expected`: when
 * retention removed that record, the first one read is later, and the
 * request is answered 410 naming it (a skip is never silent). Reads that
 * first entry before the page is answered. A later first entry at or above
 * the track's first available one (`first`) only skips records compaction
 * removed, which a page passes over without a word.
 */
async function continuing(
  entries: ReadableStream<LedgerEntry>,
  expected: number,
  first: () => Promise<number>,
): Promise<AsyncIterable<LedgerEntry>> {
  const reader = entries.getReader();
  const head = await reader.read();
  if (!head.done && head.value.seq > expected && expected < await first()) {
    await reader.cancel();
    const first = entryGroup(head.value);
    throw new GoneError(
      first,
      `Records from ${formatGroupId({ epoch: 1, seq: expected })} to before ${first} ` +
        `were removed by the track's retention; it starts at ${first}`,
    );
  }
  return (async function* () {
    try {
      if (head.done) return;
      yield head.value;
      while (true) {
        const next = await reader.read();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      reader.releaseLock();
    }
  })();
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
  return clientInput(() => parseGroupId(text), `${name}: `);
}
